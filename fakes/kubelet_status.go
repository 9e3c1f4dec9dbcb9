package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The simulated kubelet's Node: registration and status.

// nodeStatus is the part of the kubelet that registers the Node and
// posts its status. Its lock guards the readiness it reports, when it
// last reported, and how often it posted.
type nodeStatus struct {
	*host

	mu         sync.Mutex
	notReady   bool      // in the startup blip: Ready=False
	lastReport time.Time // last status post, on the injected clock
	posts      int
}

func (s *nodeStatus) setNotReady(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notReady = v
}

// reported records a status post made at now.
func (s *nodeStatus) reported(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastReport = now
	s.posts++
}

func (s *nodeStatus) postCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts
}

func (s *nodeStatus) nodeInfo() corev1.NodeSystemInfo {
	return corev1.NodeSystemInfo{
		MachineID: s.cfg.NodeName, SystemUUID: s.cfg.NodeName,
		BootID: s.cfg.Kernel.BootID(), KernelVersion: s.cfg.Kernel.Version(),
		OSImage: s.cfg.OSImage, ContainerRuntimeVersion: DefaultRuntimeVersion,
		KubeletVersion: s.cfg.KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
	}
}

// conditions returns the conditions the kubelet would post now, carrying
// over transition times from old when a status did not change.
func (s *nodeStatus) conditions(old []corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	s.mu.Lock()
	notReady := s.notReady
	s.mu.Unlock()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if notReady {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: NotReadyBlipMessage}
	}
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		ready,
	}
	for i := range conds {
		conds[i].LastHeartbeatTime = now
		conds[i].LastTransitionTime = now
		for _, o := range old {
			if o.Type == conds[i].Type && o.Status == conds[i].Status {
				conds[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return conds
}

// ForeignNodeError is returned by Kubelet.Start when a Node of the
// kubelet's name exists that no bootproof kubelet created (it lacks
// contract.SimulatedLabel): the kubelet never takes over such a Node,
// which may be a real node of a shared cluster.
type ForeignNodeError struct {
	Node string
}

func (e *ForeignNodeError) Error() string {
	return fmt.Sprintf("node %s already exists and was not created by bootproof (it lacks label %s=true): refusing to take it over",
		e.Node, contract.SimulatedLabel)
}

func (s *nodeStatus) newNode(now metav1.Time) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname: s.cfg.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		contract.SimulatedLabel: "true",
	}
	maps.Copy(labels, s.cfg.Labels)
	labels[contract.SimulatedLabel] = "true"
	taints := contract.SimulatedTaints()
	for _, t := range s.cfg.Taints {
		if !slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.MatchTaint(&t) }) {
			taints = append(taints, t)
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.cfg.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity: s.cfg.Capacity, Allocatable: s.cfg.Capacity,
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: s.cfg.Address}, {Type: corev1.NodeHostName, Address: s.cfg.NodeName}},
			Conditions: s.conditions(nil, now),
			NodeInfo:   s.nodeInfo(),
		},
	}
}

// register creates the Node, or takes over an existing one that a
// bootproof kubelet created (any other is a *ForeignNodeError): a changed
// boot ID there means the node rebooted, which the kubelet announces with
// a Rebooted event, as the real kubelet does.
func (s *nodeStatus) register(ctx context.Context) error {
	if err := s.link.wait(ctx); err != nil {
		return err
	}
	nodes := s.cfg.Client.CoreV1().Nodes()
	now := metav1.NewTime(s.cfg.Clock.Now())
	_, err := nodes.Create(ctx, s.newNode(now), metav1.CreateOptions{})
	switch {
	case err == nil:
		s.reported(now.Time)
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("register node %s: %w", s.cfg.NodeName, err)
	}
	old, err := nodes.Get(ctx, s.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("register node %s: %w", s.cfg.NodeName, err)
	}
	if old.Labels[contract.SimulatedLabel] != "true" {
		return &ForeignNodeError{Node: s.cfg.NodeName}
	}
	// The new boot's status first, then the event that reports it.
	err = s.patch(ctx, old)
	if prev, cur := old.Status.NodeInfo.BootID, s.cfg.Kernel.BootID(); err == nil && prev != "" && prev != cur {
		s.event(ctx, old, corev1.EventTypeWarning, "Rebooted", fmt.Sprintf("Node %s has been rebooted, boot id: %s", s.cfg.NodeName, cur))
	}
	return err
}

// post computes status and posts it when it changed or when the
// report interval passed (always when force is set).
func (s *nodeStatus) post(ctx context.Context, force bool) error {
	if err := s.link.wait(ctx); err != nil {
		return err
	}
	node, err := s.read(ctx)
	if apierrors.IsNotFound(err) {
		return s.register(ctx)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", s.cfg.NodeName, err)
	}
	s.mu.Lock()
	due := s.cfg.Clock.Since(s.lastReport) >= s.cfg.Timing.ReportInterval
	s.mu.Unlock()
	if !force && !due && !s.changed(node) {
		return nil
	}
	return s.patch(ctx, node)
}

// read returns the Node to compare the status with: from cfg.Nodes (the
// node lister of a kubelet 1.31 or later), or else from the API server's
// watch cache (resourceVersion 0), as older kubelets' tryUpdateNodeStatus
// read it. Either way not a quorum read from etcd every status interval
// of every node, which would load the API server and etcd that the
// reconcilers and kubelets share.
func (s *nodeStatus) read(ctx context.Context) (*corev1.Node, error) {
	if s.cfg.Nodes != nil {
		return s.cfg.Nodes.Node(s.cfg.NodeName)
	}
	return s.cfg.Client.CoreV1().Nodes().Get(ctx, s.cfg.NodeName, metav1.GetOptions{ResourceVersion: "0"})
}

// changed reports whether the status the kubelet would post now differs
// from node's in what a kubelet compares: the conditions' status, reason
// and message, the boot ID and the kernel version.
func (s *nodeStatus) changed(node *corev1.Node) bool {
	want := s.conditions(node.Status.Conditions, metav1.NewTime(s.cfg.Clock.Now()))
	for _, w := range want {
		found := false
		for _, o := range node.Status.Conditions {
			if o.Type == w.Type {
				found = true
				if o.Status != w.Status || o.Reason != w.Reason || o.Message != w.Message {
					return true
				}
			}
		}
		if !found {
			return true
		}
	}
	info := s.nodeInfo()
	return node.Status.NodeInfo.BootID != info.BootID || node.Status.NodeInfo.KernelVersion != info.KernelVersion
}

// patch posts the status with a strategic merge patch, as the
// kubelet does; an update of the whole Node would race the controller
// manager's taints, which NodeRestriction forbids a node to touch.
func (s *nodeStatus) patch(ctx context.Context, node *corev1.Node) error {
	now := metav1.NewTime(s.cfg.Clock.Now())
	status := map[string]any{
		"conditions": s.conditions(node.Status.Conditions, now),
		"nodeInfo":   s.nodeInfo(),
		"capacity":   s.cfg.Capacity, "allocatable": s.cfg.Capacity,
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := s.cfg.Client.CoreV1().Nodes().PatchStatus(ctx, s.cfg.NodeName, patch); err != nil {
		return fmt.Errorf("post status of node %s: %w", s.cfg.NodeName, err)
	}
	s.reported(now.Time)
	return nil
}

// loop computes status every StatusInterval until ctx ends and posts it
// when it changed or the report interval passed.
func (s *nodeStatus) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(s.cfg.Timing.StatusInterval):
		}
		if !s.link.up() {
			continue
		}
		if err := s.post(ctx, false); err != nil && ctx.Err() == nil {
			s.log.Error(err, "post node status")
		}
	}
}

// endStartupBlip ends the startup's Ready=False after d and posts
// Ready=True at once.
func (s *nodeStatus) endStartupBlip(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-s.cfg.Clock.After(d):
	}
	s.setNotReady(false)
	if err := s.post(ctx, true); err != nil && ctx.Err() == nil {
		s.log.Error(err, "post status after startup blip")
	}
}

// event records a core/v1 Event about the node, as the kubelet does.
func (s *nodeStatus) event(ctx context.Context, node *corev1.Node, typ, reason, msg string) {
	now := metav1.NewTime(s.cfg.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: s.cfg.NodeName + ".", Namespace: metav1.NamespaceDefault},
		// The kubelet refers to its node with UID = node name.
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: types.UID(node.Name)},
		Reason:         reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "kubelet", Host: s.cfg.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: s.cfg.NodeName,
	}
	if _, err := s.cfg.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Error(err, "record event", "reason", reason)
	}
}
