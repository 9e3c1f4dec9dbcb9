package fakes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/nodeapi"
)

const (
	grace   = 8 * time.Second
	monitor = time.Second
)

// env is one control plane and helpers for a test.
type env struct {
	t     *testing.T
	cp    *controlplane.ControlPlane
	admin kubernetes.Interface
}

func newEnv(t *testing.T) *env {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: grace, MonitorPeriod: monitor})
	return &env{t: t, cp: cp, admin: kubernetes.NewForConfigOrDie(cp.RESTConfig())}
}

// recordingKernel wraps a SimKernel and records every modprobe call.
type recordingKernel struct {
	*fakes.SimKernel
	mu  sync.Mutex
	ops []string
}

func (r *recordingKernel) Load(m string) error {
	r.mu.Lock()
	r.ops = append(r.ops, "load "+m)
	r.mu.Unlock()
	return r.SimKernel.Load(m)
}

func (r *recordingKernel) Unload(m string) error {
	r.mu.Lock()
	r.ops = append(r.ops, "unload "+m)
	r.mu.Unlock()
	return r.SimKernel.Unload(m)
}

func (r *recordingKernel) Ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// startKubelet runs a kubelet for name with the node's own credentials and
// the fast timing profile, and waits until it registered.
func (e *env) startKubelet(ctx context.Context, name string) (*fakes.Kubelet, *recordingKernel) {
	e.t.Helper()
	creds, err := e.cp.NodeCredentials(name)
	if err != nil {
		e.t.Fatal(err)
	}
	sim, err := fakes.NewSimKernel(fakes.SimKernelConfig{})
	if err != nil {
		e.t.Fatal(err)
	}
	kern := &recordingKernel{SimKernel: sim}
	kl, err := fakes.New(fakes.Config{NodeName: name, Client: kubernetes.NewForConfigOrDie(creds.RESTConfig),
		Kernel: kern, Timing: fakes.TimingProfiles[nodeapi.TimingFast]})
	if err != nil {
		e.t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- kl.Start(runCtx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("kubelet %s: %v", name, err)
		}
	})
	select {
	case <-kl.Registered():
	case err := <-done:
		e.t.Fatalf("kubelet %s stopped: %v", name, err)
	case <-time.After(time.Minute):
		e.t.Fatalf("kubelet %s did not register within a minute", name)
	}
	return kl, kern
}

// nodeObs is one observed state of a Node.
type nodeObs struct {
	at     time.Time
	ready  corev1.ConditionStatus
	bootID string
}

// watchNode records every change of a Node's Ready status and boot ID
// through a watch (never by sampling).
type nodeWatch struct {
	mu   sync.Mutex
	obs  []nodeObs
	stop func()
}

func (e *env) watchNode(ctx context.Context, name string) *nodeWatch {
	e.t.Helper()
	w, err := e.admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	nw := &nodeWatch{stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			nw.mu.Lock()
			nw.obs = append(nw.obs, nodeObs{at: time.Now(), ready: contract.NodeReady(n), bootID: n.Status.NodeInfo.BootID})
			nw.mu.Unlock()
		}
	}()
	e.t.Cleanup(w.Stop)
	return nw
}

func (w *nodeWatch) snapshot() []nodeObs {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.obs)
}

// bootIDs lists the distinct boot IDs in the order seen.
func (w *nodeWatch) bootIDs() []string {
	var ids []string
	for _, o := range w.snapshot() {
		if len(ids) == 0 || ids[len(ids)-1] != o.bootID {
			ids = append(ids, o.bootID)
		}
	}
	return ids
}

// eventually polls f until it returns nil or the generous deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

func (e *env) groundTruth(ctx context.Context, node string) (*contract.GroundTruth, error) {
	l, err := e.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	g, err := contract.ReadGroundTruth(l)
	if err == nil && g == nil {
		err = fmt.Errorf("no ground truth on lease %s", node)
	}
	return g, err
}

func TestFastRebootStaysReady(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kl, kern := e.startKubelet(ctx, "n1")
	w := e.watchNode(ctx, "n1")
	if err := kern.Load("dummy"); err != nil {
		t.Fatal(err)
	}
	oldBoot := kern.BootID()
	// Let a few heartbeats go by, then reboot for 0.3 x grace.
	time.Sleep(3 * time.Second)
	downtime := time.Duration(0.3 * float64(grace))
	if err := kl.Reboot(ctx, fakes.RebootSpec{Downtime: downtime, AfterRenewal: true}); err != nil {
		t.Fatal(err)
	}
	newBoot := kern.BootID()
	if newBoot == oldBoot || newBoot == "" {
		t.Fatalf("boot ID %q after reboot, was %q", newBoot, oldBoot)
	}
	if got := kern.Loaded(); len(got) != 0 {
		t.Errorf("modules in the new boot: %v, want none", got)
	}
	// Keep watching for a grace period more: the controller manager had
	// every chance to mark the node.
	time.Sleep(grace + 2*monitor)
	for _, o := range w.snapshot() {
		if o.ready != corev1.ConditionTrue {
			t.Errorf("Ready = %q at %s during a %s reboot (grace %s)", o.ready, o.at.Format(time.StampMilli), downtime, grace)
		}
	}
	if ids := w.bootIDs(); !slices.Equal(ids, []string{oldBoot, newBoot}) {
		t.Errorf("boot IDs seen = %v, want exactly one change %s -> %s", ids, oldBoot, newBoot)
	}
	eventually(t, 30*time.Second, "Rebooted event", func() error {
		evs, err := e.admin.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=n1,reason=Rebooted"})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, newBoot) && ev.Source.Component == "kubelet" {
				return nil
			}
		}
		return fmt.Errorf("events: %v", evs.Items)
	})
	eventually(t, 30*time.Second, "ground truth of the new boot", func() error {
		g, err := e.groundTruth(ctx, "n1")
		if err != nil {
			return err
		}
		if g.BootID != newBoot || len(g.Modules) != 0 {
			return fmt.Errorf("ground truth %+v", g)
		}
		return nil
	})
}

func TestSlowRebootGoesUnknown(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kl, kern := e.startKubelet(ctx, "n1")
	w := e.watchNode(ctx, "n1")
	oldBoot := kern.BootID()
	if err := kl.Reboot(ctx, fakes.RebootSpec{Downtime: 2 * grace, AfterRenewal: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Ready True again", func() error {
		obs := w.snapshot()
		if last := obs[len(obs)-1]; last.ready != corev1.ConditionTrue || last.bootID != kern.BootID() {
			return fmt.Errorf("last observation %+v", last)
		}
		return nil
	})
	var sawUnknown bool
	for _, o := range w.snapshot() {
		if o.ready == corev1.ConditionUnknown {
			sawUnknown = true
			if o.bootID != oldBoot {
				t.Errorf("Ready Unknown with boot %s: the node went Unknown only after it was back", o.bootID)
			}
		}
	}
	if !sawUnknown {
		t.Errorf("Ready never Unknown during a %s reboot (grace %s): %+v", 2*grace, grace, w.snapshot())
	}
	if ids := w.bootIDs(); len(ids) != 2 || ids[0] != oldBoot {
		t.Errorf("boot IDs seen = %v, want %s then one new one", ids, oldBoot)
	}
}

func TestRestartKubeletAndNetworkBlipKeepBoot(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kl, kern := e.startKubelet(ctx, "n1")
	w := e.watchNode(ctx, "n1")
	if err := kern.Load("dummy"); err != nil {
		t.Fatal(err)
	}
	boot := kern.BootID()
	// The restart is requested with a context that ends as soon as it
	// returns (an HTTP request's, say): the new kubelet process must
	// outlive it.
	reqCtx, reqCancel := context.WithCancel(ctx)
	if err := kl.RestartKubelet(reqCtx, time.Second); err != nil {
		t.Fatal(err)
	}
	reqCancel()
	lease := func() string {
		l, err := e.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.ResourceVersion
	}
	rv := lease()
	deadline := time.Now().Add(30 * time.Second)
	for lease() == rv {
		if time.Now().After(deadline) {
			t.Fatal("no Lease renewal after the restart request's context ended: the restarted kubelet died with it")
		}
		time.Sleep(200 * time.Millisecond)
	}
	kl.Pause()
	time.Sleep(2 * time.Second)
	kl.Resume()
	time.Sleep(3 * time.Second)
	if kern.BootID() != boot || !slices.Equal(names(kern.Loaded()), []string{"dummy"}) {
		t.Errorf("after kubelet restart and blip: boot %s (was %s), modules %v", kern.BootID(), boot, kern.Loaded())
	}
	if ids := w.bootIDs(); !slices.Equal(ids, []string{boot}) {
		t.Errorf("boot IDs seen = %v, want only %s", ids, boot)
	}
	if kl.Stats().Boots != 2 {
		t.Errorf("kubelet starts = %d, want 2", kl.Stats().Boots)
	}
}

// TestRebootWhileKubeletDown reboots a node whose kubelet is down for a
// restart: like a real machine the node reboots, the reboot supersedes
// the restart, and exactly one kubelet process runs in the new boot.
func TestRebootWhileKubeletDown(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kl, kern := e.startKubelet(ctx, "n1")
	boot := kern.BootID()
	restarted := make(chan error, 1)
	go func() { restarted <- kl.RestartKubelet(ctx, 4*time.Second) }()
	time.Sleep(500 * time.Millisecond)
	if err := kl.Reboot(ctx, fakes.RebootSpec{Downtime: time.Second}); err != nil {
		t.Fatalf("reboot while the kubelet is down: %v", err)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("superseded kubelet restart: %v", err)
	}
	if kern.BootID() == boot || kern.BootID() == "" {
		t.Errorf("boot ID after the reboot = %q, want a new one (was %s)", kern.BootID(), boot)
	}
	if got := kl.Stats().Boots; got != 2 {
		t.Errorf("kubelet starts = %d, want 2 (first boot and the reboot; the superseded restart starts none)", got)
	}
	eventually(t, 30*time.Second, "node n1 reports the new boot", func() error {
		n, err := e.admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Status.NodeInfo.BootID != kern.BootID() {
			return fmt.Errorf("node boot ID %s, kernel %s", n.Status.NodeInfo.BootID, kern.BootID())
		}
		return nil
	})
}

func names(mods []fakes.LoadedModule) []string {
	var out []string
	for _, m := range mods {
		out = append(out, m.Name)
	}
	return out
}

func workerPod(name, node, action, config string, policy corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels:      map[string]string{contract.WorkerActionLabel: action},
			Annotations: map[string]string{contract.WorkerConfigAnnotation: config}},
		// As the engine's NodeModulesConfigs ask: the node's NoExecute
		// taint would have kube-controller-manager evict it otherwise.
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: policy, Tolerations: contract.SimulatedTolerations(),
			Containers: []corev1.Container{{Name: contract.WorkerContainerName, Image: "example.invalid/kmod:1",
				Args: []string{"kmod", strings.ToLower(action), "/etc/kmm-worker/config.yaml"}}}},
	}
}

// runWorker creates a worker pod and waits until its phase is terminal or
// its worker container has restarted.
func (e *env) runWorker(ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	if _, err := e.admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	var got *corev1.Pod
	eventually(e.t, time.Minute, "pod "+pod.Name+" done", func() error {
		p, err := e.admin.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = p
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return nil
		}
		if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount > 0 {
			return nil
		}
		return fmt.Errorf("phase %s", p.Status.Phase)
	})
	return got
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == contract.WorkerContainerName {
			return s.State.Terminated
		}
	}
	return nil
}

func TestWorkerContract(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, kern := e.startKubelet(ctx, "n1")
	version := kern.Version()
	order := fmt.Sprintf("kernelVersion: %s\nmodprobe:\n  moduleName: kmm_ci_a\n  modulesLoadingOrder: [kmm_ci_a, kmm_ci_b]\n", version)

	load := e.runWorker(ctx, workerPod("load", "n1", contract.ActionLoad, order, corev1.RestartPolicyOnFailure))
	if load.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("load pod phase %s: %+v", load.Status.Phase, load.Status)
	}
	if ops := kern.Ops(); !slices.Equal(ops, []string{"load kmm_ci_b", "load kmm_ci_a"}) {
		t.Errorf("modprobe calls = %v, want kmm_ci_b then kmm_ci_a", ops)
	}
	term := terminated(load)
	msg, err := contract.ParseWorkerTerminationMessage(term.Message)
	if err != nil || msg.BootID != kern.BootID() || msg.Action != contract.ActionLoad || term.ExitCode != 0 {
		t.Errorf("termination %+v, message %+v (%v), want boot %s", term, msg, err, kern.BootID())
	}
	eventually(t, 30*time.Second, "ground truth lists the loaded modules", func() error {
		g, err := e.groundTruth(ctx, "n1")
		if err != nil {
			return err
		}
		if _, ok := g.Has("kmm_ci_a"); !ok || g.BootID != kern.BootID() {
			return fmt.Errorf("ground truth %+v", g)
		}
		return nil
	})

	unload := e.runWorker(ctx, workerPod("unload", "n1", contract.ActionUnload, order, corev1.RestartPolicyOnFailure))
	if unload.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("unload pod phase %s", unload.Status.Phase)
	}
	if ops := kern.Ops()[2:]; !slices.Equal(ops, []string{"unload kmm_ci_a", "unload kmm_ci_b"}) {
		t.Errorf("modprobe -r calls = %v, want kmm_ci_a then kmm_ci_b", ops)
	}
	if len(kern.Loaded()) != 0 {
		t.Errorf("loaded after unload: %v", kern.Loaded())
	}

	unknown := e.runWorker(ctx, workerPod("unknown", "n1", contract.ActionLoad, "modprobe:\n  moduleName: no_such_mod\n", corev1.RestartPolicyNever))
	if unknown.Status.Phase != corev1.PodFailed || !strings.Contains(unknown.Status.Message, "no_such_mod") {
		t.Errorf("unknown module: phase %s message %q, want Failed naming no_such_mod", unknown.Status.Phase, unknown.Status.Message)
	}
	if term := terminated(unknown); term == nil || term.ExitCode == 0 || !strings.Contains(term.Message, "no_such_mod") {
		t.Errorf("unknown module: container termination %+v", term)
	}

	// restartPolicy OnFailure: the kubelet restarts the failed container.
	crash := e.runWorker(ctx, workerPod("crash", "n1", contract.ActionLoad, "modprobe:\n  moduleName: no_such_mod\n", corev1.RestartPolicyOnFailure))
	st := crash.Status.ContainerStatuses[0]
	if crash.Status.Phase != corev1.PodRunning || st.RestartCount < 1 || st.LastTerminationState.Terminated == nil ||
		!strings.Contains(st.LastTerminationState.Terminated.Message, "no_such_mod") {
		t.Errorf("OnFailure: phase %s, container %+v; want Running with a restarted container whose last state names no_such_mod", crash.Status.Phase, st)
	}

	mismatch := e.runWorker(ctx, workerPod("mismatch", "n1", contract.ActionLoad, "kernelVersion: 9.9.9-other\nmodprobe:\n  moduleName: dummy\n", corev1.RestartPolicyNever))
	if mismatch.Status.Phase != corev1.PodFailed || !strings.Contains(mismatch.Status.Message, "9.9.9-other") || !strings.Contains(mismatch.Status.Message, version) {
		t.Errorf("kernel mismatch: phase %s message %q", mismatch.Status.Phase, mismatch.Status.Message)
	}

	// A pod that is not a worker is Failed, never Running (it tolerates
	// the taints here, so only the kubelet decides); deleting it removes
	// it.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Tolerations: contract.SimulatedTolerations(),
			Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
	if _, err := e.admin.CoreV1().Pods("default").Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "plain pod Failed on the simulated node", func() error {
		p, err := e.admin.CoreV1().Pods("default").Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != fakes.SimulatedNodeReason {
			return fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
		}
		return nil
	})
	if err := e.admin.CoreV1().Pods("default").Delete(ctx, "plain", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "plain pod gone after graceful delete", func() error {
		_, err := e.admin.CoreV1().Pods("default").Get(ctx, "plain", metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// TestFleet runs three nodes with per-node identities and one shared pod
// informer that runs as the fleet identity with only FleetRBAC's rule.
func TestFleet(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	role, binding := fakes.FleetRBAC(fakes.FleetUser)
	if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fc, err := e.cp.ClientCredentials(fakes.FleetUser)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := fakes.NewFleet(fakes.FleetConfig{Count: 3, Prefix: "f-", Timing: fakes.TimingProfiles[nodeapi.TimingFast],
		Client: kubernetes.NewForConfigOrDie(fc.RESTConfig),
		NodeClient: func(name string) (kubernetes.Interface, error) {
			c, err := e.cp.NodeCredentials(name)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(c.RESTConfig)
		}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fleet.Start(runCtx) }()
	if err := fleet.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	pod := e.runWorker(ctx, workerPod("w", "f-0001", contract.ActionLoad, "modprobe:\n  moduleName: dummy\n", corev1.RestartPolicyOnFailure))
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Errorf("worker on f-0001: phase %s", pod.Status.Phase)
	}
	for _, kl := range fleet.Kubelets() {
		want := 0
		if kl.NodeName() == "f-0001" {
			want = 1
		}
		if got := len(kl.Kernel().Loaded()); got != want {
			t.Errorf("node %s has %d modules, want %d", kl.NodeName(), got, want)
		}
	}
	nodes, err := e.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("fleet: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("fleet did not stop within 30s")
	}
}
