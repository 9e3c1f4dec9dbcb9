package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The simulated kubelet's Node: registration and status.

func (k *Kubelet) nodeInfo() corev1.NodeSystemInfo {
	return corev1.NodeSystemInfo{
		MachineID: k.cfg.NodeName, SystemUUID: k.cfg.NodeName,
		BootID: k.cfg.Kernel.BootID(), KernelVersion: k.cfg.Kernel.Version(),
		OSImage: k.cfg.OSImage, ContainerRuntimeVersion: DefaultRuntimeVersion,
		KubeletVersion: k.cfg.KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
	}
}

// conditions returns the conditions the kubelet would post now, carrying
// over transition times from old when a status did not change.
func (k *Kubelet) conditions(old []corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	k.mu.Lock()
	notReady := k.notReady
	k.mu.Unlock()
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

func (k *Kubelet) newNode(now metav1.Time) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname: k.cfg.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
	}
	maps.Copy(labels, k.cfg.Labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: k.cfg.Taints},
		Status: corev1.NodeStatus{
			Capacity: k.cfg.Capacity, Allocatable: k.cfg.Capacity,
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.cfg.Address}, {Type: corev1.NodeHostName, Address: k.cfg.NodeName}},
			Conditions: k.conditions(nil, now),
			NodeInfo:   k.nodeInfo(),
		},
	}
}

// register creates the Node, or takes over an existing one: a changed
// boot ID there means the node rebooted, which the kubelet announces with
// a Rebooted event, as the real kubelet does.
func (k *Kubelet) register(ctx context.Context) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	nodes := k.cfg.Client.CoreV1().Nodes()
	now := metav1.NewTime(k.cfg.Clock.Now())
	_, err := nodes.Create(ctx, k.newNode(now), metav1.CreateOptions{})
	switch {
	case err == nil:
		k.mu.Lock()
		k.lastReport = now.Time
		k.stats.StatusPosts++
		k.mu.Unlock()
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("register node %s: %w", k.cfg.NodeName, err)
	}
	old, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("register node %s: %w", k.cfg.NodeName, err)
	}
	if prev, cur := old.Status.NodeInfo.BootID, k.cfg.Kernel.BootID(); prev != "" && prev != cur {
		k.event(ctx, old, corev1.EventTypeWarning, "Rebooted", fmt.Sprintf("Node %s has been rebooted, boot id: %s", k.cfg.NodeName, cur))
	}
	return k.patchStatus(ctx, old)
}

// postStatus computes status and posts it when it changed or when the
// report interval passed (always when force is set).
func (k *Kubelet) postStatus(ctx context.Context, force bool) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	node, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return k.register(ctx)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", k.cfg.NodeName, err)
	}
	k.mu.Lock()
	due := k.cfg.Clock.Since(k.lastReport) >= k.cfg.Timing.ReportInterval
	k.mu.Unlock()
	if !force && !due && !k.statusChanged(node) {
		return nil
	}
	return k.patchStatus(ctx, node)
}

func (k *Kubelet) statusChanged(node *corev1.Node) bool {
	want := k.conditions(node.Status.Conditions, metav1.NewTime(k.cfg.Clock.Now()))
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
	info := k.nodeInfo()
	return node.Status.NodeInfo.BootID != info.BootID || node.Status.NodeInfo.KernelVersion != info.KernelVersion
}

// patchStatus posts the status with a strategic merge patch, as the
// kubelet does; an update of the whole Node would race the controller
// manager's taints, which NodeRestriction forbids a node to touch.
func (k *Kubelet) patchStatus(ctx context.Context, node *corev1.Node) error {
	now := metav1.NewTime(k.cfg.Clock.Now())
	status := map[string]any{
		"conditions": k.conditions(node.Status.Conditions, now),
		"nodeInfo":   k.nodeInfo(),
		"capacity":   k.cfg.Capacity, "allocatable": k.cfg.Capacity,
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := k.cfg.Client.CoreV1().Nodes().PatchStatus(ctx, k.cfg.NodeName, patch); err != nil {
		return fmt.Errorf("post status of node %s: %w", k.cfg.NodeName, err)
	}
	k.mu.Lock()
	k.lastReport = now.Time
	k.stats.StatusPosts++
	k.mu.Unlock()
	return nil
}

func (k *Kubelet) statusLoop(lt *lifetime) {
	for {
		select {
		case <-lt.ctx.Done():
			return
		case <-k.cfg.Clock.After(k.cfg.Timing.StatusInterval):
		}
		if !k.isOnline() {
			continue
		}
		if err := k.postStatus(lt.ctx, false); err != nil && lt.ctx.Err() == nil {
			k.log.Error(err, "post node status")
		}
	}
}
