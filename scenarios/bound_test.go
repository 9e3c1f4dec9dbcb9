package scenarios

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/observe/observetest"
)

// A whole case through Engine.Run on fake clients: a scripted node set
// whose reboots change the Node's boot ID and the kernel's ground truth,
// and a scripted subject that loads the module firstLoad after it
// starts and again reloadAfter after each boot change it sees.

// TestMain turns client-go's streaming lists off: the fake clientsets
// never send the bookmark that ends a watch-list stream, so informers on
// them would wait forever.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

// world is what the scripted nodes and subject share: the fake clients
// and a lock over their writes to a node's Lease.
type world struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	mu  sync.Mutex
	// taintedFor, when set, registers nodes with the node lifecycle
	// controller's not-ready taint and removes it that much later.
	taintedFor time.Duration
}

func (w *world) writeTruth(ctx context.Context, node, boot string, modules ...string) error {
	leases := w.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	l.Annotations = map[string]string{observetest.Annotation: observetest.Value(boot, modules...)}
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

type scriptedCluster struct{}

func (scriptedCluster) Name() string               { return "scripted" }
func (scriptedCluster) RESTConfig() *rest.Config   { return &rest.Config{} }
func (scriptedCluster) GracePeriod() time.Duration { return 10 * time.Second }

type scriptedBackend struct{ w *world }

func (b scriptedBackend) Name() string { return "scripted" }

func (b scriptedBackend) Provision(ctx context.Context, req nodeapi.ProvisionRequest) (nodeapi.NodeSet, error) {
	for _, n := range req.Names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: req.Labels}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{BootID: n + "-boot-0"}}}
		if b.w.taintedFor > 0 {
			node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
			time.AfterFunc(b.w.taintedFor, func() {
				n, err := b.w.cs.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
				if err == nil {
					n.Spec.Taints = nil
					_, _ = b.w.cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
				}
			})
		}
		if _, err := b.w.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: corev1.NamespaceNodeLease}}
		if _, err := b.w.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if err := b.w.writeTruth(ctx, n, n+"-boot-0"); err != nil {
			return nil, err
		}
	}
	return &scriptedNodes{w: b.w, boots: map[string]int{}}, nil
}

type scriptedNodes struct {
	w     *world
	boots map[string]int
}

// Reboot gives the node a new boot with no module loaded.
func (s *scriptedNodes) Reboot(ctx context.Context, node string, _ nodeapi.RebootRequest) (nodeapi.RebootOutcome, error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	out := nodeapi.RebootOutcome{OldBootID: fmt.Sprintf("%s-boot-%d", node, s.boots[node])}
	s.boots[node]++
	out.NewBootID = fmt.Sprintf("%s-boot-%d", node, s.boots[node])
	n, err := s.w.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return out, err
	}
	n.Status.NodeInfo.BootID = out.NewBootID
	if _, err := s.w.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return out, err
	}
	return out, s.w.writeTruth(ctx, node, out.NewBootID)
}

func (s *scriptedNodes) Close() error { return nil }

// scriptedSubject loads module dummy firstLoad after it starts and
// reloadAfter after it sees each new boot, recording each load in the
// NodeModulesConfig's status.
type scriptedSubject struct {
	w                      *world
	firstLoad, reloadAfter time.Duration
	// growth multiplies each reload's delay after the first reload (0:
	// all take reloadAfter); reloads caps how many reloads it makes per
	// node (0: no cap).
	growth  float64
	reloads int
	// startedTainted: a node carried a taint when the subject started.
	startedTainted bool
}

func (s *scriptedSubject) Name() string { return SubjectBootID }

func (s *scriptedSubject) Start(ctx context.Context, req SubjectRequest) (SubjectInstance, error) {
	if nodes, err := s.w.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			s.startedTainted = s.startedTainted || len(n.Spec.Taints) > 0
		}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in := &scriptedInstance{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		loaded, since, done := map[string]string{}, map[string]time.Time{}, map[string]int{}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			nodes, err := s.w.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, n := range nodes.Items {
				boot := n.Status.NodeInfo.BootID
				if loaded[n.Name] == boot {
					continue
				}
				delay := s.reloadAfter
				if s.growth > 0 {
					delay = time.Duration(float64(delay) * math.Pow(s.growth, float64(max(0, done[n.Name]-1))))
				}
				if loaded[n.Name] == "" {
					delay = s.firstLoad
				} else if s.reloads > 0 && done[n.Name] > s.reloads {
					continue
				}
				if since[n.Name+boot].IsZero() {
					since[n.Name+boot] = time.Now()
				}
				if time.Since(since[n.Name+boot]) < delay {
					continue
				}
				if s.load(ctx, n.Name, boot) == nil {
					loaded[n.Name] = boot
					done[n.Name]++
				}
			}
		}
	}()
	return in, nil
}

// load loads dummy in boot, if the node is still in it, and records it.
func (s *scriptedSubject) load(ctx context.Context, node, boot string) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	n, err := s.w.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || n.Status.NodeInfo.BootID != boot {
		return fmt.Errorf("node %s left boot %s", node, boot)
	}
	if err := s.w.writeTruth(ctx, node, boot, "dummy"); err != nil {
		return err
	}
	nmcs := s.w.dyn.Resource(contract.NMCResource)
	nmc, err := nmcs.Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	status := []any{map[string]any{"name": "dummy", "namespace": "ns", "bootId": boot,
		"config": map[string]any{"modprobe": map[string]any{"moduleName": "dummy"}}}}
	if err := unstructured.SetNestedSlice(nmc.Object, status, "status", "modules"); err != nil {
		return err
	}
	_, err = nmcs.Update(ctx, nmc, metav1.UpdateOptions{})
	return err
}

type scriptedInstance struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (i *scriptedInstance) Stop() error {
	i.cancel()
	<-i.done
	return nil
}

// expecting is the scripted subject with an expectation of its own.
type expecting struct {
	*scriptedSubject
	exp Expectation
}

func (e expecting) Expectation(*Scenario) (Expectation, bool) { return e.exp, true }

// scriptedFastReboot is one fast reboot between two reload waits.
func scriptedFastReboot(deadline time.Duration) *Scenario {
	return &Scenario{Name: "scripted-fast-reboot", Nodes: 1, Modules: []Module{{Name: "dummy", ModuleName: "dummy"}}, Precondition: "recorded",
		Deadline:    Duration{Abs: deadline, Set: true},
		ReloadBound: ReloadBound{FirstLoadTimes: 2, AtLeast: Duration{Abs: 100 * time.Millisecond, Set: true}},
		Actions: []Action{{Kind: ActWaitReloaded, Line: 1}, {Kind: ActReboot, Downtime: Duration{Abs: time.Millisecond, Set: true}, Wait: true, Line: 2},
			{Kind: ActWaitReloaded, Line: 3}}}
}

// runScriptedScenario runs s with a subject that loads after firstLoad
// and reloads after reloadAfter, expected to get exp; opts change the
// engine first.
func runScriptedScenario(t *testing.T, s *Scenario, firstLoad, reloadAfter time.Duration, exp Expectation, opts ...func(*Engine)) CaseResult {
	t.Helper()
	w := newWorld(0)
	return runWith(w, s, &scriptedSubject{w: w, firstLoad: firstLoad, reloadAfter: reloadAfter}, exp, opts...)
}

// newWorld returns an empty scripted world whose nodes keep the
// lifecycle controller's not-ready taint for taintedFor (0: none).
func newWorld(taintedFor time.Duration) *world {
	return &world{cs: k8sfake.NewClientset(), taintedFor: taintedFor,
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{contract.NMCResource: "NodeModulesConfigList"})}
}

// runWith runs s in w with subj, expected to get exp; opts change the
// engine first.
func runWith(w *world, s *Scenario, subj *scriptedSubject, exp Expectation, opts ...func(*Engine)) CaseResult {
	e := &Engine{Cluster: scriptedCluster{}, Backend: scriptedBackend{w}, SettleTimeout: 5 * time.Second,
		clients: func() (kubernetes.Interface, dynamic.Interface, error) { return w.cs, w.dyn, nil }}
	for _, o := range opts {
		o(e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return e.Run(ctx, s, expecting{subj, exp})
}

// TestInitialLoadFailureIsNotAnExpectedReloadFailure: a subject that never
// loads anything, expected (as legacy is) to fail through reload, fails
// the initial load; its reload waits failing too must not make that
// "failed as expected": the case never reached the state the expectation
// is about, so the verdict is an error naming the initial load. Expected
// to fail through initial-load, it is a pass; expected to pass, a fail.
func TestInitialLoadFailureIsNotAnExpectedReloadFailure(t *testing.T) {
	never := time.Hour
	for _, tc := range []struct {
		name        string
		exp         Expectation
		wantVerdict string
		wantMsg     string
	}{
		{"expected fail:reload", Expectation{Outcome: Fail, Assertions: []string{AssertReload}, Source: "test"}, Error, "failed for the wrong reason: the case never reached the state its expectation (fail:reload, test) is about: initial-load: "},
		{"expected fail (any assertion)", Expectation{Outcome: Fail, Source: "test"}, Error, "initial-load: "},
		{"expected fail:initial-load", Expectation{Outcome: Fail, Assertions: []string{AssertInitialLoad}, Source: "test"}, Pass, "failed as expected (initial-load: "},
		{"expected pass", Expectation{Outcome: Pass, Source: "test"}, Fail, "initial-load: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runScriptedScenario(t, scriptedFastReboot(2*time.Second), never, never, tc.exp)
			if r.Observed != Fail || r.Verdict != tc.wantVerdict || !strings.Contains(r.Message, tc.wantMsg) {
				t.Errorf("observed %s, verdict %s (%s); want observed fail, verdict %s with %q", r.Observed, r.Verdict, r.Message, tc.wantVerdict, tc.wantMsg)
			}
			if a := find(r.Assertions, AssertInitialLoad); a.OK || !strings.Contains(a.Message, "not reloaded within") {
				t.Errorf("initial-load %+v: want it failed by the wait before the reboot", a)
			}
		})
	}
}

// TestObservedOutcomeIgnoresTheExpectation: a subject that reloads k x
// its first load after a reboot is observed the same, with the same
// assertions, whether it is expected to pass or to fail: it passes inside
// the service level (here 2 x the first load), fails reload-slo beyond
// it (late, its reload seen: reload holds) and fails reload when it never
// reloads by the scenario's deadline (missed). The first load is 1s, so
// the reload that takes as long still has a second of slack under the
// service level on a loaded machine.
func TestObservedOutcomeIgnoresTheExpectation(t *testing.T) {
	t.Parallel()
	const first = time.Second
	pass := Expectation{Outcome: Pass, Source: "test"}
	failReload := Expectation{Outcome: Fail, Assertions: []string{AssertReload}, Source: "test"}
	failLate := Expectation{Outcome: Fail, Assertions: []string{AssertReloadSLO}, Source: "test"}
	for _, tc := range []struct {
		k        float64
		observed string
		// failed is the assertion it fails through; exp the expectation
		// that names it.
		failed string
		exp    Expectation
	}{
		{0.5, Pass, "", failLate},
		{1, Pass, "", failReload},
		{5, Fail, AssertReloadSLO, failLate},  // 5s: late, past the 2s service level, inside the 8s deadline
		{100, Fail, AssertReload, failReload}, // missed: not by the deadline
	} {
		t.Run(fmt.Sprintf("k=%v", tc.k), func(t *testing.T) {
			t.Parallel()
			reload := time.Duration(tc.k * float64(first))
			s := scriptedFastReboot(8 * time.Second)
			asPass := runScriptedScenario(t, s, first, reload, pass)
			asFail := runScriptedScenario(t, s, first, reload, tc.exp)
			for _, r := range []CaseResult{asPass, asFail} {
				if r.Observed != tc.observed {
					t.Errorf("expected %s: observed %s, want %s (%s; %+v)", r.Expected, r.Observed, tc.observed, r.Message, r.Assertions)
				}
				if r.ReloadBound == nil || r.ReloadBound.FirstLoadMS < first.Milliseconds() || r.ReloadBound.Rule != "2 x the slowest load measured, at least 100ms" {
					t.Errorf("reload bound %+v", r.ReloadBound)
				}
				if len(r.Notes) > 0 {
					t.Errorf("notes %v", r.Notes)
				}
				for _, a := range r.Assertions {
					if a.OK == (a.Name == tc.failed) && (a.Name == AssertReload || a.Name == AssertReloadSLO) {
						t.Errorf("%s ok=%v (%s), want only %q failed", a.Name, a.OK, a.Message, tc.failed)
					}
				}
			}
			if got, want := outcomes(asFail), outcomes(asPass); got != want {
				t.Errorf("assertions differ with the expectation:\n pass: %s\n fail: %s\n expected pass: %s\n expected %s: %s", want, got, failures(asPass), tc.exp, failures(asFail))
			}
			wantVerdict := map[string][2]string{Pass: {Pass, Fail}, Fail: {Fail, Pass}}[tc.observed]
			if asPass.Verdict != wantVerdict[0] || asFail.Verdict != wantVerdict[1] {
				t.Errorf("verdicts %s (expected pass), %s (expected %s); want %v", asPass.Verdict, asFail.Verdict, tc.exp, wantVerdict)
			}
			if tc.observed == Pass {
				if r := find(asPass.Assertions, AssertReload); !r.OK || len(r.Reloads) != 1 || !strings.Contains(r.Message, "reload latency") {
					t.Errorf("a passing case's reload assertion: %+v", r)
				}
			}
			if tc.failed == AssertReloadSLO {
				if r := find(asPass.Assertions, AssertReloadSLO); len(r.Reloads) != 1 || !r.Reloads[0].Late || !strings.Contains(r.Message, "late") {
					t.Errorf("a late reload: %+v", r)
				}
			}
		})
	}
}

// failures lists the failed assertions with their messages.
func failures(r CaseResult) string {
	var out []string
	for _, a := range r.Assertions {
		if !a.OK {
			out = append(out, a.Name+": "+a.Message)
		}
	}
	return strings.Join(out, "; ")
}

// outcomes lists the assertions by name and outcome.
func outcomes(r CaseResult) string {
	var out []string
	for _, a := range r.Assertions {
		out = append(out, fmt.Sprintf("%s=%v", a.Name, a.OK))
	}
	return strings.Join(out, " ")
}

func find(as []AssertionResult, name string) AssertionResult {
	for _, a := range as {
		if a.Name == name {
			return a
		}
	}
	return AssertionResult{}
}

// TestFirstLoadWithoutReloadWait: a timeline whose first load happens
// with no reload wait around it (here during a sleep, as in the race
// scenarios that wait for worker pods) still measures it from the kernel's
// ground truth, so the reload after the reboot is judged against the
// service level it sizes; a subject that never reloads is waited for
// until the deadline and fails reload (missed).
func TestFirstLoadWithoutReloadWait(t *testing.T) {
	const first = 300 * time.Millisecond
	w := &world{cs: k8sfake.NewClientset(),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{contract.NMCResource: "NodeModulesConfigList"})}
	e := &Engine{Cluster: scriptedCluster{}, Backend: scriptedBackend{w}, SettleTimeout: 5 * time.Second,
		clients: func() (kubernetes.Interface, dynamic.Interface, error) { return w.cs, w.dyn, nil }}
	deadline := 4 * time.Second
	s := &Scenario{Name: "scripted-load-in-sleep", Nodes: 1, Modules: []Module{{Name: "dummy", ModuleName: "dummy"}}, Precondition: "recorded",
		Deadline:    Duration{Abs: deadline, Set: true},
		ReloadBound: ReloadBound{FirstLoadTimes: 2, AtLeast: Duration{Abs: 100 * time.Millisecond, Set: true}},
		Actions: []Action{{Kind: ActSleep, Duration: Duration{Abs: 3 * first, Set: true}, Line: 1},
			{Kind: ActReboot, Downtime: Duration{Abs: time.Millisecond, Set: true}, Wait: true, Line: 2},
			{Kind: ActWaitReloaded, Line: 3}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	r := e.Run(ctx, s, expecting{&scriptedSubject{w: w, firstLoad: first, reloadAfter: time.Hour}, Expectation{Outcome: Pass, Source: "test"}})
	took := time.Since(start)
	if r.ReloadBound == nil || r.ReloadBound.FirstLoadMS < first.Milliseconds() || r.ReloadBound.BoundMS >= deadline.Milliseconds() {
		t.Fatalf("reload bound %+v: want the first load (>= %s) measured and a service level under the deadline", r.ReloadBound, first)
	}
	if r.Observed != Fail || find(r.Assertions, AssertReload).OK {
		t.Errorf("observed %s, reload %+v: want a reload failure", r.Observed, find(r.Assertions, AssertReload))
	}
	if a := find(r.Assertions, AssertReload); !strings.Contains(a.Message, "not reloaded within 4s (the scenario's deadline)") {
		t.Errorf("reload %+v: want it missed at the deadline", a)
	}
	if took < deadline {
		t.Errorf("the case took %s: the wait ended before the deadline %s", took, deadline)
	}
}

// TestReloadBoundGrowsWithMeasuredReloads: a correct subject whose
// reloads grow slower (1s, 1.6s, 2.56s after a 1s first load, as backoff
// built up by errors does) passes: each reload it made sizes the next
// one's service level (2 x the slowest load measured, 3.2s for the
// third). Sized by the first load alone (about 2s), its third reload was
// late. A subject that stops reloading after two reboots misses the
// third: reload fails at the deadline.
func TestReloadBoundGrowsWithMeasuredReloads(t *testing.T) {
	t.Parallel()
	const first = time.Second
	s := scriptedFastReboot(8 * time.Second)
	reboot := s.Actions[1]
	wait := s.Actions[2]
	s.Actions = append(s.Actions, reboot, wait, reboot, wait)
	for _, tc := range []struct {
		name     string
		reloads  int
		observed string
	}{
		{"reloads after every reboot, slower each time", 0, Pass},
		{"misses the third reboot", 2, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(0)
			subj := &scriptedSubject{w: w, firstLoad: first, reloadAfter: first, growth: 1.6, reloads: tc.reloads}
			r := runWith(w, s, subj, Expectation{Outcome: Pass, Source: "test"})
			if r.Observed != tc.observed {
				t.Fatalf("observed %s, want %s: %s; %+v", r.Observed, tc.observed, r.Message, r.Assertions)
			}
			if tc.observed == Pass && (r.ReloadBound == nil || r.ReloadBound.SlowestReloadMS <= r.ReloadBound.FirstBoundMS || r.ReloadBound.BoundMS <= r.ReloadBound.FirstBoundMS) {
				t.Errorf("reload bound %+v: want a reload slower than the first load's bound passed, the bound grown by it (about 2.56s)", r.ReloadBound)
			}
			if tc.observed == Fail {
				if a := find(r.Assertions, AssertReload); a.OK || !strings.Contains(a.Message, "not reloaded within 8s (the scenario's deadline)") {
					t.Errorf("reload %+v: want the third reload missed", a)
				}
				if a := find(r.Assertions, AssertReloadSLO); !a.OK || a.NotJudged == "" {
					t.Errorf("reload-slo %+v: want the two reloads that came within the service level, the missed one left to reload", a)
				}
			}
		})
	}
}

// TestSubjectStartsOnUntaintedNodes: a node is Ready before the node
// lifecycle controller removes its not-ready taint (seconds, more under a
// storm of registrations), and no worker pod may run there until then;
// the subject starts, and its first load is timed, only once the taint is
// gone, so the cluster's delay is never the subject's failure.
// Its reload (0.1s) sits far inside the bound (2 x a first load of 1s),
// so a loaded machine's scheduling delays cannot fail it.
func TestSubjectStartsOnUntaintedNodes(t *testing.T) {
	t.Parallel()
	w := newWorld(time.Second)
	subj := &scriptedSubject{w: w, firstLoad: time.Second, reloadAfter: 100 * time.Millisecond}
	r := runWith(w, scriptedFastReboot(20*time.Second), subj, Expectation{Outcome: Pass, Source: "test"})
	if r.Verdict != Pass || subj.startedTainted {
		t.Errorf("verdict %s (%s); subject started on a tainted node: %v", r.Verdict, r.Message, subj.startedTainted)
	}
}
