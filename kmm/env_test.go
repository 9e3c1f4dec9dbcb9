package kmm_test

// The integration tests share one embedded control plane (started by the
// first test that needs it, stopped by TestMain) and play the kubelet
// themselves: they register Nodes and change their boot ID and Ready
// condition with the node's own credentials, and finish worker pods by
// writing their status, again as the node. The reconciler runs as a user
// in kmm.RBACGroup, so it has exactly the permissions of the embedded RBAC
// manifest.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/kmm"
	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

const (
	// workerNS is the namespace of every test module and worker pod.
	workerNS = "kmm-test"
	// kernel is the kernel version of every test node.
	kernel = "6.1.0-bootproof"
	// deadline bounds every wait for something that must happen.
	deadline = 60 * time.Second
	// settle is how long a test keeps watching after the reconciler went
	// quiet, before it concludes that something did not happen.
	settle = 2 * time.Second
)

type env struct {
	cp     *controlplane.ControlPlane
	admin  client.Client
	adminC kubernetes.Interface
	// ctrl is the reconciler's identity: a user in kmm.RBACGroup.
	ctrl *rest.Config
	pods *podRecorder
}

var (
	shared     *env
	sharedErr  error
	sharedOnce sync.Once
	sharedStop func()
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if sharedStop != nil {
		sharedStop()
	}
	os.Exit(code)
}

// sharedEnv returns the package's control plane with the CRD and RBAC
// installed, starting it on first use.
func sharedEnv(t *testing.T) *env {
	t.Helper()
	cptest.RequireBinaries(t)
	sharedOnce.Do(func() { shared, sharedErr = startEnv() })
	if sharedErr != nil {
		t.Fatalf("shared control plane: %v", sharedErr)
	}
	return shared
}

func startEnv() (*env, error) {
	dir, err := os.MkdirTemp("", "bootproof-kmm-test-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The tests drive Ready by hand; a long grace period keeps the node
	// lifecycle controller from marking the heartbeat-less test nodes
	// Unknown during the run.
	cp, err := controlplane.Start(ctx, controlplane.Config{Dir: dir, GracePeriod: 10 * time.Minute, MonitorPeriod: time.Second})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stopInformer := make(chan struct{})
	sharedStop = func() {
		close(stopInformer)
		cp.Stop()
		os.RemoveAll(dir)
	}
	scheme, err := kmm.NewScheme()
	if err != nil {
		return nil, err
	}
	admin, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	adminC := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := adminC.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerNS}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	// Pods need the namespace's default ServiceAccount, which the
	// serviceaccount controller creates.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, deadline, true, func(ctx context.Context) (bool, error) {
		_, err := adminC.CoreV1().ServiceAccounts(workerNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("default ServiceAccount in %s: %w", workerNS, err)
	}
	if err := kmm.Install(ctx, cp.RESTConfig(), kmm.InstallOptions{WorkerNamespaces: []string{workerNS}}); err != nil {
		return nil, err
	}
	creds, err := cp.ClientCredentials("bootproof-kmm-test", kmm.RBACGroup)
	if err != nil {
		return nil, err
	}
	e := &env{cp: cp, admin: admin, adminC: adminC, ctrl: creds.RESTConfig}
	e.pods, err = newPodRecorder(adminC, stopInformer)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// --- the reconciler under test ---

type controllerRun struct {
	logs   *logCapture
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startController runs the reconciler as the RBAC group's user until
// stop or the end of t.
func (e *env) startController(t *testing.T, o kmm.Options, logs *logCapture) *controllerRun {
	t.Helper()
	o.WorkerNamespaces = []string{workerNS}
	o.Logger = logs.logger()
	ctx, cancel := context.WithCancel(context.Background())
	r := &controllerRun{logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- kmm.Run(ctx, rest.CopyConfig(e.ctrl), o) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *controllerRun) stop(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("reconciler stopped with an error: %v", err)
			}
		case <-time.After(deadline):
			t.Errorf("reconciler did not stop within %s", deadline)
		}
	})
}

// --- captured logs ---

type logEntry struct {
	Msg    string
	Values map[string]any
}

type logCapture struct {
	mu      sync.Mutex
	entries []logEntry
}

func newLogCapture(t *testing.T) *logCapture {
	l := &logCapture{}
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			from := max(0, len(l.entries)-80)
			var b strings.Builder
			for _, e := range l.entries[from:] {
				fmt.Fprintf(&b, "%s %v\n", e.Msg, e.Values)
			}
			t.Logf("last reconciler log lines:\n%s", b.String())
		}
	})
	return l
}

func (l *logCapture) logger() logr.Logger {
	return funcr.NewJSON(func(obj string) {
		m := map[string]any{}
		if json.Unmarshal([]byte(obj), &m) != nil {
			return
		}
		msg, _ := m["msg"].(string)
		l.mu.Lock()
		l.entries = append(l.entries, logEntry{Msg: msg, Values: m})
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 1})
}

// mark returns a position; waits look only at entries after it.
func (l *logCapture) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *logCapture) find(from int, match func(logEntry) bool) (logEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries[min(from, len(l.entries)):] {
		if match(e) {
			return e, true
		}
	}
	return logEntry{}, false
}

// settle makes the reconciler look at node once more (a label change
// passes its Node predicate) and waits until it has seen the node in
// bootID with Ready as given and found nothing to do. Only then, and
// after a short watch, does a test conclude that something did not
// happen.
func (e *env) settle(t *testing.T, logs *logCapture, node, bootID string, ready bool) {
	t.Helper()
	from := logs.mark()
	e.updateNode(t, node, func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["bootproof.test/poke"] = strconv.FormatInt(time.Now().UnixNano(), 36)
	})
	logs.waitQuiet(t, from, node, bootID, ready)
}

// waitQuiet waits, after mark, for a reconcile of node in boot bootID with
// Ready as given that changed nothing: the reconciler has seen that state
// and decided there is nothing (more) to do.
func (l *logCapture) waitQuiet(t *testing.T, from int, node, bootID string, ready bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("a reconcile of node %s in boot %s (ready %v) that changes nothing", node, bootID, ready), func() bool {
		_, ok := l.find(from, func(e logEntry) bool {
			v := e.Values
			return e.Msg == "reconciled" && v["node"] == node && v["bootID"] == bootID && v["ready"] == ready &&
				v["statusChanged"] == false && v["created"] == float64(0) && v["released"] == float64(0) &&
				v["retry"] == false && v["errors"] == float64(0)
		})
		return ok
	})
	time.Sleep(settle)
}

// --- a node, driven as its kubelet would ---

type testNode struct {
	name  string
	kube  kubernetes.Interface // the node's own credentials
	admin kubernetes.Interface
}

func (e *env) newNode(t *testing.T, name, bootID string) *testNode {
	t.Helper()
	creds, err := e.cp.NodeCredentials(name)
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{name: name, kube: kubernetes.NewForConfigOrDie(creds.RESTConfig), admin: e.adminC}
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now}},
			NodeInfo: corev1.NodeSystemInfo{BootID: bootID, KernelVersion: kernel, OperatingSystem: "linux", Architecture: "amd64",
				KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "bootproof://test"},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := n.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register node %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := e.adminC.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
	})
	return n
}

// status changes the node's status as its kubelet does: a strategic
// merge patch of the status subresource, so that a concurrent change of
// the node's spec (taints from the node lifecycle controller) neither
// conflicts nor looks like the node changing its taints.
func (n *testNode) status(t *testing.T, change func(*corev1.Node)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	node, err := n.kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", n.name, err)
	}
	oldJSON, err := json.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	change(node)
	newJSON, err := json.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.kube.CoreV1().Nodes().Patch(ctx, n.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patch status of node %s: %v", n.name, err)
	}
}

// reboot gives the node a new boot ID, keeping Ready True throughout: a
// reboot that finished inside the grace period.
func (n *testNode) reboot(t *testing.T, bootID string) {
	t.Helper()
	n.status(t, func(node *corev1.Node) {
		node.Status.NodeInfo.BootID = bootID
		setReady(node, corev1.ConditionTrue)
	})
}

// setReady sets the Ready condition, moving its transition time only when
// the status changes, as a kubelet does.
func (n *testNode) setReady(t *testing.T, status corev1.ConditionStatus) {
	t.Helper()
	n.status(t, func(node *corev1.Node) { setReady(node, status) })
}

func setReady(node *corev1.Node, status corev1.ConditionStatus) {
	now := metav1.Now()
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type == corev1.NodeReady {
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status = status
			c.LastHeartbeatTime = now
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status,
		LastHeartbeatTime: now, LastTransitionTime: now})
}

// finish reports the worker pod Succeeded as the node's kubelet, with the
// contract's termination message naming bootID; an empty bootID writes no
// message, as an upstream worker does.
func (n *testNode) finish(t *testing.T, pod *corev1.Pod, bootID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := n.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != pod.UID {
			return fmt.Errorf("pod %s/%s was replaced", pod.Namespace, pod.Name)
		}
		msg := ""
		if bootID != "" {
			cfg, err := worker.ConfigOf(p)
			if err != nil {
				return err
			}
			res := map[string]any{"bootID": bootID, "action": p.Labels[worker.ActionLabel],
				"modules": []string{cfg.Modprobe.ModuleName}, "kernelVersion": cfg.KernelVersion}
			b, _ := json.Marshal(res)
			msg = string(b)
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  worker.ContainerName,
			Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: msg, StartedAt: now, FinishedAt: now}},
		}}
		_, err = n.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("finish pod %s/%s as node %s: %v", pod.Namespace, pod.Name, n.name, err)
	}
}

// podStatus changes a worker pod's status as the node's kubelet.
func (n *testNode) podStatus(t *testing.T, pod *corev1.Pod, change func(*corev1.Pod)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := n.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != pod.UID {
			return fmt.Errorf("pod %s/%s was replaced", pod.Namespace, pod.Name)
		}
		change(p)
		_, err = n.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update status of pod %s/%s as node %s: %v", pod.Namespace, pod.Name, n.name, err)
	}
}

// confirmDeletion waits until pod is being deleted and then removes it
// as its kubelet does once the containers are gone.
func (n *testNode) confirmDeletion(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	eventually(t, fmt.Sprintf("pod %s/%s marked for deletion", pod.Namespace, pod.Name), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		p, err := n.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && (p.UID != pod.UID || p.DeletionTimestamp != nil))
	})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err := n.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		t.Fatalf("confirm deletion of pod %s/%s as node %s: %v", pod.Namespace, pod.Name, n.name, err)
	}
}

// --- NodeModulesConfigs ---

func moduleSpec(name, image string) kmmv1beta1.NodeModuleSpec {
	return kmmv1beta1.NodeModuleSpec{
		ModuleItem: kmmv1beta1.ModuleItem{Name: name, Namespace: workerNS},
		Config: kmmv1beta1.ModuleConfig{
			KernelVersion:  kernel,
			ContainerImage: image,
			Modprobe:       kmmv1beta1.ModprobeSpec{ModuleName: strings.ReplaceAll(name, "-", "_")},
		},
	}
}

func (e *env) createNMC(t *testing.T, node string, modules ...kmmv1beta1.NodeModuleSpec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	nmc := &kmmv1beta1.NodeModulesConfig{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: kmmv1beta1.NodeModulesConfigSpec{Modules: modules}}
	if err := e.admin.Create(ctx, nmc); err != nil {
		t.Fatalf("create nodemodulesconfig %s: %v", node, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := e.admin.Delete(ctx, &kmmv1beta1.NodeModulesConfig{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete nodemodulesconfig %s: %v", node, err)
		}
	})
}

func (e *env) updateSpec(t *testing.T, node string, change func(*kmmv1beta1.NodeModulesConfigSpec)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nmc := &kmmv1beta1.NodeModulesConfig{}
		if err := e.admin.Get(ctx, types.NamespacedName{Name: node}, nmc); err != nil {
			return err
		}
		change(&nmc.Spec)
		return e.admin.Update(ctx, nmc)
	})
	if err != nil {
		t.Fatalf("update nodemodulesconfig %s: %v", node, err)
	}
}

func (e *env) nmc(t *testing.T, node string) *kmmv1beta1.NodeModulesConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	nmc := &kmmv1beta1.NodeModulesConfig{}
	if err := e.admin.Get(ctx, types.NamespacedName{Name: node}, nmc); err != nil {
		t.Fatalf("get nodemodulesconfig %s: %v", node, err)
	}
	return nmc
}

func statusOf(nmc *kmmv1beta1.NodeModulesConfig, module string) *kmmv1beta1.NodeModuleStatus {
	for i := range nmc.Status.Modules {
		if nmc.Status.Modules[i].Name == module && nmc.Status.Modules[i].Namespace == workerNS {
			return &nmc.Status.Modules[i]
		}
	}
	return nil
}

// waitStatus waits until the module's status entry satisfies ok (nil: the
// entry is gone) and returns it.
func (e *env) waitStatus(t *testing.T, node, module, what string, ok func(*kmmv1beta1.NodeModuleStatus) bool) *kmmv1beta1.NodeModuleStatus {
	t.Helper()
	var st *kmmv1beta1.NodeModuleStatus
	eventually(t, fmt.Sprintf("status of module %s on node %s: %s", module, node, what), func() bool {
		st = statusOf(e.nmc(t, node), module)
		return ok(st)
	})
	return st
}

// --- worker pods, as they were created ---

type podRecord struct {
	UID            types.UID
	Node, Module   string
	Action         worker.Action
	Name           string
	FirstSeenOrder int
}

// podRecorder remembers every worker pod ever created in workerNS, so a
// test can count loads even after the reconciler deleted the pods.
type podRecorder struct {
	mu   sync.Mutex
	pods map[types.UID]podRecord
	n    int
}

func newPodRecorder(cs kubernetes.Interface, stop <-chan struct{}) (*podRecorder, error) {
	r := &podRecorder{pods: map[types.UID]podRecord{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(workerNS),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = worker.ActionLabel }))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.see(o) },
		UpdateFunc: func(_, o any) { r.see(o) },
	}); err != nil {
		return nil, err
	}
	f.Start(stop)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("worker pod informer did not sync")
	}
	return r, nil
}

func (r *podRecorder) see(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, known := r.pods[p.UID]; known {
		return
	}
	r.n++
	r.pods[p.UID] = podRecord{UID: p.UID, Node: p.Spec.NodeName, Module: p.Labels[worker.ModuleNameLabel],
		Action: worker.ActionOf(p), Name: p.Name, FirstSeenOrder: r.n}
}

// of returns the worker pods of node and module in creation order.
func (r *podRecorder) of(node, module string) []podRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []podRecord
	for _, p := range r.pods {
		if p.Node == node && p.Module == module {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b podRecord) int { return a.FirstSeenOrder - b.FirstSeenOrder })
	return out
}

func actions(recs []podRecord) []worker.Action {
	out := make([]worker.Action, len(recs))
	for i, r := range recs {
		out[i] = r.Action
	}
	return out
}

// waitPods waits until node and module have had exactly the worker pods
// with the given actions, and returns the newest as it is now.
func (e *env) waitPods(t *testing.T, node, module string, want ...worker.Action) *corev1.Pod {
	t.Helper()
	eventually(t, fmt.Sprintf("worker pods %v for module %s on node %s", want, module, node), func() bool {
		return slices.Equal(actions(e.pods.of(node, module)), want)
	})
	recs := e.pods.of(node, module)
	last := recs[len(recs)-1]
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	pod, err := e.adminC.CoreV1().Pods(workerNS).Get(ctx, last.Name, metav1.GetOptions{})
	if err != nil || pod.UID != last.UID {
		t.Fatalf("newest worker pod %s of module %s on node %s is gone already (%v)", last.Name, module, node, err)
	}
	return pod
}

// assertPods checks that node and module have had exactly the worker pods
// with the given actions.
func (e *env) assertPods(t *testing.T, node, module string, want ...worker.Action) {
	t.Helper()
	if got := actions(e.pods.of(node, module)); !slices.Equal(got, want) {
		t.Errorf("worker pods of module %s on node %s: got %v, want %v", module, node, got, want)
	}
}

// waitPodGone waits until pod is deleted.
func (e *env) waitPodGone(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	eventually(t, fmt.Sprintf("worker pod %s/%s released and deleted", pod.Namespace, pod.Name), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := e.adminC.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID)
	})
}

// nodeEvents returns the reasons of the Events about node.
func (e *env) nodeEvents(t *testing.T, node string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	list, err := e.adminC.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "Node" && ev.Regarding.Name == node {
			out = append(out, ev.Reason)
		}
	}
	return out
}

func (e *env) waitEvent(t *testing.T, node, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("a %s Event about node %s", reason, node), func() bool {
		return slices.Contains(e.nodeEvents(t, node), reason)
	})
}

// eventually polls cond until it holds or deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		if cond() {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", deadline, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
