package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/judging"
	"github.com/bootproof/bootproof/scenarios/observe"
	"github.com/bootproof/bootproof/scenarios/observe/observetest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// The tests below drive the observer with scripted objects (what a
// backend and a subject would write) and check that every assertion can
// fail, with the message it gives.

// ReadGroundTruth reads the scripted nodes' truth (observetest).
func (scriptedBackend) ReadGroundTruth(l *coordinationv1.Lease) (*contract.GroundTruth, error) {
	return observetest.Reader{}.ReadGroundTruth(l)
}

type script struct {
	t *testing.T
	c *caseRun
}

func newScript(t *testing.T, precondition Precondition) *script {
	start := time.Now().Add(-time.Second)
	sc := &Scenario{Name: "scripted", Precondition: precondition, Modules: []Module{{Name: "dummy", ModuleName: "dummy"}},
		Deadline: Duration{Abs: 200 * time.Millisecond, Set: true}}
	c := &caseRun{s: sc, e: &Engine{SettleTimeout: 200 * time.Millisecond}, grace: 10 * time.Second, start: start, baseAt: start,
		names: []string{"n0"}, spec: map[string][]Module{"n0": sc.Modules}, kernel: map[string]string{}}
	obs, err := observe.New(observe.Config{Start: start, Nodes: c.names, GroundTruth: scriptedBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	c.obs = obs
	return &script{t: t, c: c}
}

func (s *script) node(ready corev1.ConditionStatus, boot string) {
	s.c.obs.Observe(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}, NodeInfo: corev1.NodeSystemInfo{BootID: boot}}})
}

func (s *script) truth(boot string, modules ...string) {
	s.c.obs.Observe(observetest.Lease("n0", boot, modules...))
}

func (s *script) loadPod(uid, action, boot string) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kmm-worker-n0-dummy", UID: types.UID(uid),
		Labels:      map[string]string{contract.WorkerActionLabel: action},
		Annotations: map[string]string{contract.WorkerConfigAnnotation: "modprobe:\n  moduleName: dummy\n"}},
		Spec: corev1.PodSpec{NodeName: "n0"},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "worker",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: `{"bootID":"` + boot + `","action":"` + action + `"}`}}}}}}
	s.c.obs.Observe(p)
}

func (s *script) status(boot string) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "n0"},
		"status": map[string]any{"modules": []any{map[string]any{"name": "dummy", "bootId": boot,
			"config": map[string]any{"modprobe": map[string]any{"moduleName": "dummy"}}}}}}}
	u.SetName("n0")
	s.c.obs.Observe(u)
}

// consistency runs the consistency check and records its result.
func (s *script) consistency(ctx context.Context, wait bool) {
	s.t.Helper()
	r, err := s.c.checkConsistency(ctx, wait)
	if err != nil {
		s.t.Fatal(err)
	}
	s.c.results = append(s.c.results, r)
}

func (s *script) result(name string) AssertionResult {
	for _, r := range s.c.results {
		if r.Name == name {
			return r
		}
	}
	s.t.Fatalf("no %s assertion in %+v", name, s.c.results)
	return AssertionResult{}
}

func wantFail(t *testing.T, r AssertionResult, text string) {
	t.Helper()
	if r.OK || !strings.Contains(r.Message, text) {
		t.Errorf("%s: ok=%v message %q, want a failure saying %q", r.Name, r.OK, r.Message, text)
	}
}

func TestPreconditionFastFailsOnNotReady(t *testing.T) {
	s := newScript(t, "fast")
	s.node(corev1.ConditionTrue, "a")
	s.node(corev1.ConditionUnknown, "a")
	s.c.checkPrecondition()
	wantFail(t, s.result(AssertPrecondition), "showed Ready!=True")
}

func TestPreconditionSlowFailsWhenReadyStays(t *testing.T) {
	s := newScript(t, "slow")
	s.node(corev1.ConditionTrue, "a")
	now := time.Now()
	s.c.dis.list = []*judging.Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: now, End: now.Add(time.Second), Downtime: 15 * time.Second, Completed: true}}
	s.c.checkPrecondition()
	wantFail(t, s.result(AssertPrecondition), "stayed Ready through its reboot")

	ok := newScript(t, "slow")
	ok.c.dis.list = []*judging.Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: now.Add(-time.Millisecond), End: now.Add(time.Second), Completed: true}}
	ok.node(corev1.ConditionUnknown, "a")
	ok.c.checkPrecondition()
	if r := ok.result(AssertPrecondition); !r.OK {
		t.Errorf("slow reboot with NotReady seen: %+v", r)
	}
}

func TestNoExtraWorkFailsOnSecondLoadInOneBoot(t *testing.T) {
	s := newScript(t, "recorded")
	s.node(corev1.ConditionTrue, "a")
	s.loadPod("1", "Load", "a")
	s.loadPod("2", "Load", "a")
	s.c.checkExtraWork()
	wantFail(t, s.result(AssertNoExtraWork), "module dummy loaded 2 times in boot a")

	reload := newScript(t, "recorded")
	reload.loadPod("1", "Load", "a")
	reload.loadPod("2", "Unload", "a")
	reload.loadPod("3", "Load", "a")
	reload.loadPod("4", "Load", "b")
	reload.c.checkExtraWork()
	if r := reload.result(AssertNoExtraWork); !r.OK {
		t.Errorf("an unload between two loads, and a load in a new boot, are no extra work: %+v", r)
	}
}

func TestConsistencyFailsOnStaleStatus(t *testing.T) {
	s := newScript(t, "recorded")
	s.node(corev1.ConditionTrue, "b")
	s.truth("b")
	s.status("a")
	s.consistency(context.Background(), false)
	wantFail(t, s.result(AssertConsistency), "status says dummy was loaded in boot a, the node is in boot b")

	claimed := newScript(t, "recorded")
	claimed.truth("b")
	claimed.status("b")
	claimed.consistency(context.Background(), false)
	wantFail(t, claimed.result(AssertConsistency), "status says dummy is loaded in boot b, the kernel has []")

	good := newScript(t, "recorded")
	good.truth("b", "dummy")
	good.status("b")
	good.consistency(context.Background(), false)
	if r := good.result(AssertConsistency); !r.OK {
		t.Errorf("consistent status: %+v", r)
	}
}

func TestReloadFailsWithLastState(t *testing.T) {
	s := newScript(t, "fast")
	s.node(corev1.ConditionTrue, "b")
	s.truth("b")
	s.loadPod("1", "Load", "a")
	err := s.c.waitReloaded(context.Background(), "wait-reloaded at line 9", []string{"n0"}, 300*time.Millisecond, "test")
	if !errors.Is(err, errAborted) {
		t.Fatalf("waitReloaded = %v, want the timeline aborted", err)
	}
	s.c.checkReload()
	// No disruption came before the wait: it waited for the initial load.
	r := s.result(AssertInitialLoad)
	for _, want := range []string{"1 module(s) not reloaded within 300ms (test) in wait-reloaded at line 9",
		"on node n0: module dummy not loaded in boot b", "Ready=True", "ground truth: boot=b modules=[]", "kmm-worker-n0-dummy(Load dummy Succeeded)"} {
		wantFail(t, r, want)
	}

	ok := newScript(t, "fast")
	ok.node(corev1.ConditionTrue, "b")
	ok.truth("b", "dummy")
	if err := ok.c.waitReloaded(context.Background(), "wait-reloaded", []string{"n0"}, time.Second, "test"); err != nil {
		t.Errorf("module loaded in the current boot: %v", err)
	}
	// A reload wait that holds is recorded, and the assertion says so.
	ok.c.checkReload()
	if r := ok.result(AssertInitialLoad); !r.OK || !strings.Contains(r.Message, "every module loaded in the boot each node started in, in 1 wait(s) before the first disruption") {
		t.Errorf("initial-load = %+v, want a passing assertion", r)
	}
	if r := ok.result(AssertReload); !r.OK || !strings.Contains(r.Message, "no reload wait after a disruption") {
		t.Errorf("reload = %+v, want a passing assertion with no wait", r)
	}
}

func TestJudge(t *testing.T) {
	okAll := []AssertionResult{{Name: AssertReload, OK: true}, {Name: AssertPrecondition, OK: true}}
	failed := []AssertionResult{{Name: AssertPrecondition, OK: true}, {Name: AssertReload, OK: false, Message: "not loaded"}}
	failedTwice := []AssertionResult{{Name: AssertReload, OK: false, Message: "not loaded"}, {Name: AssertPrecondition, OK: true},
		{Name: AssertConsistency, OK: false, Message: "stale"}}
	extra := []AssertionResult{{Name: AssertPrecondition, OK: true}, {Name: AssertNoExtraWork, OK: false, Message: "loaded twice"}}
	badPre := []AssertionResult{{Name: AssertPrecondition, OK: false, Message: "NotReady seen"}, {Name: AssertReload, OK: false}}
	neverLoaded := []AssertionResult{{Name: AssertPrecondition, OK: true}, {Name: AssertInitialLoad, OK: false, Message: "not loaded within 30s"},
		{Name: AssertWorker, OK: true}, {Name: AssertReload, OK: false, Message: "not reloaded"}}
	noWorker := []AssertionResult{{Name: AssertPrecondition, OK: true}, {Name: AssertInitialLoad, OK: true},
		{Name: AssertWorker, OK: false, Message: "no Load worker pod running"}, {Name: AssertReload, OK: false, Message: "not reloaded"}}
	failInitial := Expectation{Outcome: Fail, Assertions: []string{AssertInitialLoad}, Source: "scenario s"}
	pass := Expectation{Outcome: Pass, Source: "scenario s"}
	fail := Expectation{Outcome: Fail, Source: "scenario s"}
	failReload := Expectation{Outcome: Fail, Assertions: []string{AssertReload}, Source: "scenario s"}
	tests := []struct {
		name         string
		expected     Expectation
		results      []AssertionResult
		err          error
		obs, verdict string
		msg          string
	}{
		{"bootid passes", pass, okAll, nil, Pass, Pass, ""},
		{"bootid fails", pass, failed, errAborted, Fail, Fail, "reload: not loaded"},
		{"legacy fails as expected", fail, failed, errAborted, Fail, Pass, "failed as expected"},
		{"legacy fails through the named assertion", failReload, failed, errAborted, Fail, Pass, "failed as expected (reload: not loaded)"},
		{"a consequence may fail too", failReload, failedTwice, errAborted, Fail, Pass, "failed as expected"},
		{"legacy fails for the wrong reason", failReload, extra, nil, Fail, Error, "failed for the wrong reason: expected to fail through reload (scenario s), failed through no-extra-work (no-extra-work: loaded twice)"},
		{"legacy passes a fast reboot: harness broken", fail, okAll, nil, Pass, Fail, "the harness did not catch the bug"},
		{"never loaded is no expected reload failure", failReload, neverLoaded, errAborted, Fail, Error, "failed for the wrong reason: the case never reached the state its expectation (fail:reload, scenario s) is about: initial-load: not loaded within 30s"},
		{"never loaded is no expected failure through any assertion", fail, neverLoaded, errAborted, Fail, Error, "the case never reached the state"},
		{"a missing worker pod is no expected reload failure", failReload, noWorker, errAborted, Fail, Error, "worker: no Load worker pod running"},
		{"never loaded, expected so", failInitial, neverLoaded, errAborted, Fail, Pass, "failed as expected (initial-load: not loaded within 30s)"},
		{"never loaded, expected to pass", pass, neverLoaded, errAborted, Fail, Fail, "initial-load: not loaded within 30s"},
		{"precondition violated is an error", pass, badPre, nil, Error, Error, "invalid run: NotReady seen"},
		{"precondition violated is an error for legacy too", failReload, badPre, nil, Error, Error, "invalid run: NotReady seen"},
		{"infrastructure fault", pass, nil, &infraError{errors.New("apiserver gone")}, Error, Error, "infrastructure fault: apiserver gone"},
		{"infrastructure fault never fails as expected", fail, failed, &infraError{errors.New("apiserver gone")}, Error, Error, "infrastructure fault"},
		{"subject exited", fail, failed, fmt.Errorf("actions[1]: %w", &subjectError{err: errors.New("subject op stopped during the case: exit status 2")}), Error, Error, "subject fault: subject op stopped"},
		{"missing capability", pass, nil, &skipError{"backend fake cannot reboot in mode panic"}, Skipped, Skipped, "cannot reboot in mode panic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decide("fast-reboot-0.5g", "legacy", tc.expected, tc.results, tc.err)
			obs, verdict, msg := d.Observed, d.Verdict, d.Message
			if obs != tc.obs || verdict != tc.verdict || !strings.Contains(msg, tc.msg) {
				t.Errorf("judge = %s, %s, %q; want %s, %s, %q", obs, verdict, msg, tc.obs, tc.verdict, tc.msg)
			}
		})
	}
}

// Node sets of various capabilities for TestCheckNodeCapabilities.
type bareNodes struct{}

func (bareNodes) Reboot(context.Context, string, nodeapi.RebootRequest) (nodeapi.RebootOutcome, error) {
	return nodeapi.RebootOutcome{}, nil
}
func (bareNodes) Close() error { return nil }

type vmLikeNodes struct{ bareNodes }

func (vmLikeNodes) RebootModes() []nodeapi.RebootMode {
	return []nodeapi.RebootMode{nodeapi.RebootReset, nodeapi.RebootPanic}
}
func (vmLikeNodes) CheckReboot(r nodeapi.RebootRequest) error {
	if r.KernelVersion != "" {
		return errors.New("booting another kernel version is not supported")
	}
	return nil
}
func (vmLikeNodes) PauseNode(context.Context, string, time.Duration) error { return nil }

func TestCheckNodeCapabilities(t *testing.T) {
	tests := []struct {
		name   string
		nodes  nodeapi.NodeSet
		action Action
		skip   string // "" = runs
	}{
		{"reset on any backend", bareNodes{}, Action{Kind: ActReboot}, ""},
		{"mode without RebootModes", bareNodes{}, Action{Kind: ActReboot, Mode: "panic"}, "backend b cannot reboot in mode panic (implemented: reset)"},
		{"mode supported", vmLikeNodes{}, Action{Kind: ActReboot, Mode: "panic"}, ""},
		{"mode not listed", vmLikeNodes{}, Action{Kind: ActReboot, Mode: "guest"}, "backend b cannot reboot in mode guest (implemented: reset, panic)"},
		{"checker refuses", vmLikeNodes{}, Action{Kind: ActReboot, KernelVersion: "6.2"}, "backend b: booting another kernel version is not supported"},
		{"no pause", bareNodes{}, Action{Kind: ActPauseNode}, "backend b cannot pause a node"},
		{"pause", vmLikeNodes{}, Action{Kind: ActPauseNode}, ""},
		{"no kubelet restart", vmLikeNodes{}, Action{Kind: ActRestartKubelet}, "backend b cannot restart a kubelet without a reboot"},
		{"no network blip", vmLikeNodes{}, Action{Kind: ActNetworkBlip}, "backend b cannot cut a node off the network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &caseRun{e: &Engine{Backend: backendName("b")}, grace: 10 * time.Second, nodes: tt.nodes,
				s: &Scenario{Name: "s", Actions: []Action{{Kind: ActWaitReloaded}, tt.action}}}
			err := c.checkNodeCapabilities()
			var skip *skipError
			switch {
			case tt.skip == "" && err != nil:
				t.Fatalf("unexpected %v", err)
			case tt.skip != "" && (!errors.As(err, &skip) || skip.reason != tt.skip):
				t.Fatalf("got %v, want skip %q", err, tt.skip)
			}
		})
	}
}

// A load the subject asked for late (its pod still Pending when the
// timeline ends, as on a VM whose pod watch is reconnecting after a
// network blip) is waited for and then counted.
func TestLateExtraLoadIsWaitedForAndCounted(t *testing.T) {
	s := newScript(t, "recorded")
	s.node(corev1.ConditionTrue, "a")
	s.loadPod("1", "Load", "a")
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kmm-worker-n0-dummy", UID: "2",
		Labels:      map[string]string{contract.WorkerActionLabel: "Load"},
		Annotations: map[string]string{contract.WorkerConfigAnnotation: "modprobe:\n  moduleName: dummy\n"}},
		Spec: corev1.PodSpec{NodeName: "n0"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	s.c.obs.Observe(pending)
	if got := s.c.obs.ActiveWorkers(); len(got) != 1 || !strings.Contains(got[0], "Load dummy, Pending") {
		t.Fatalf("ActiveWorkers = %v", got)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		s.loadPod("2", "Load", "a")
	}()
	start := time.Now()
	if r, err := s.c.waitWorkersDone(context.Background(), 30*time.Second); err != nil || !r.OK {
		t.Fatalf("waitWorkersDone = %+v, %v; want workers-finish held", r, err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond || waited > 20*time.Second {
		t.Errorf("waited %s for the pending worker", waited)
	}
	s.c.checkExtraWork()
	wantFail(t, s.result(AssertNoExtraWork), "module dummy loaded 2 times in boot a")

	// A deleted pod is not waited for; nothing active returns at once.
	d := newScript(t, "recorded")
	d.c.obs.Observe(pending)
	d.c.obs.ObserveDeleted(cache.DeletedFinalStateUnknown{Key: "x", Obj: pending})
	start = time.Now()
	if r, err := d.c.waitWorkersDone(context.Background(), 30*time.Second); err != nil || !r.OK {
		t.Fatalf("waitWorkersDone = %+v, %v; want workers-finish held", r, err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("waited %s for a deleted pod", waited)
	}

	// A worker still active at the end of the wait is the subject's
	// fault: workers-finish fails, naming it, and the case is a fail
	// (it was an invalid run, an error, before).
	stuck := newScript(t, "recorded")
	stuck.c.obs.Observe(pending)
	r, err := stuck.c.waitWorkersDone(context.Background(), 300*time.Millisecond)
	if err != nil {
		t.Fatalf("waitWorkersDone with a stuck worker: error %v, want a failed assertion", err)
	}
	wantFail(t, r, "1 worker pod(s) still not ended 300ms after the timeline on node n0: worker pod kmm-worker-n0-dummy (Load dummy, Pending)")
	if d := decide("s", "bootid", Expectation{Outcome: Pass}, []AssertionResult{r}, nil); d.Verdict != Fail || !strings.HasPrefix(d.Message, "workers-finish: ") {
		t.Errorf("judged %s: %s; want fail through workers-finish", d.Verdict, d.Message)
	}
}

// statusNoBoot scripts an NMC status entry without bootId, as KMM before
// boot-ID support writes it.
func (s *script) statusNoBoot(module string) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "n0"},
		"status": map[string]any{"modules": []any{map[string]any{"name": module,
			"config": map[string]any{"modprobe": map[string]any{"moduleName": module}}}}}}}
	u.SetName("n0")
	s.c.obs.Observe(u)
}

// An operator whose API has no status.modules[].bootId is judged on which
// modules its status lists, not failed for the boot it cannot record.
func TestConsistencyWithoutBootIDs(t *testing.T) {
	ok := newScript(t, "recorded")
	ok.truth("b", "dummy")
	ok.statusNoBoot("dummy")
	ok.consistency(context.Background(), false)
	r := ok.result(AssertConsistency)
	if !r.OK || !strings.Contains(r.Message, "boot part not judged: no status entry of the subject ever carried a bootId") ||
		r.NotJudged != "boot part not judged: no status entry of the subject ever carried a bootId, so only which modules are listed is compared" {
		t.Errorf("status without boot IDs matching the kernel: %+v", r)
	}

	missing := newScript(t, "recorded")
	missing.truth("b")
	missing.statusNoBoot("dummy")
	missing.consistency(context.Background(), false)
	wantFail(t, missing.result(AssertConsistency), "node n0: status lists dummy as loaded, the kernel has []")

	// Once a status entry carried a bootId, the boot part applies.
	withBoot := newScript(t, "recorded")
	withBoot.truth("b", "dummy")
	withBoot.status("a")
	withBoot.consistency(context.Background(), false)
	wantFail(t, withBoot.result(AssertConsistency), "status says dummy was loaded in boot a, the node is in boot b")

	// A subject that writes its first bootId while the status settles is
	// judged with the boot part (it was decided once, before the wait,
	// and a status written late with a stale boot passed).
	late := newScript(t, "recorded")
	late.truth("b", "dummy")
	go func() {
		time.Sleep(300 * time.Millisecond)
		late.status("a")
	}()
	late.c.e.SettleTimeout = 2 * time.Second
	late.consistency(context.Background(), true)
	r = late.result(AssertConsistency)
	if r.OK || r.NotJudged != "" {
		t.Errorf("a status written late with a stale boot: %+v, want the boot part judged and failed", r)
	}
}

// crashingInstance is a subject instance that stopped on its own.
type crashingInstance struct{ err error }

func (crashingInstance) Stop() error  { return nil }
func (c crashingInstance) Err() error { return c.err }
func (namedSubject) Start(context.Context, SubjectRequest) (SubjectInstance, error) {
	return nil, errors.New("not started in tests")
}

type namedSubject string

func (n namedSubject) Name() string { return string(n) }

// A subject that exits during a wait ends the wait at once with a subject
// fault, never a failed reload.
func TestSubjectExitEndsTheCase(t *testing.T) {
	s := newScript(t, "fast")
	s.c.subj = namedSubject("op")
	s.c.inst = crashingInstance{errors.New("exit status 3; last lines of op.log:\n  panic: boom")}
	s.node(corev1.ConditionTrue, "b")
	s.truth("b")
	start := time.Now()
	err := s.c.waitReloaded(context.Background(), "wait-reloaded", []string{"n0"}, 30*time.Second, "test")
	if time.Since(start) > 10*time.Second {
		t.Errorf("waited %s for a subject that had exited", time.Since(start))
	}
	var se *subjectError
	if !errors.As(err, &se) {
		t.Fatalf("waitReloaded = %v, want a subject fault", err)
	}
	if len(s.c.results) != 0 {
		t.Errorf("a subject fault was judged: %+v", s.c.results)
	}
	d := decide("fast-reboot-0.5g", "op", Expectation{Outcome: Fail}, s.c.results, err)
	verdict, msg := d.Verdict, d.Message
	if verdict != Error || !strings.Contains(msg, "subject op stopped during the case: exit status 3") || !strings.Contains(msg, "panic: boom") {
		t.Errorf("verdict %s: %s", verdict, msg)
	}
}

type pausable struct {
	namedSubject
	reason error
}

func (p pausable) CanPause() error { return p.reason }

func TestCheckCapabilitiesAsksTheSubject(t *testing.T) {
	sc := &Scenario{Name: "s", Actions: []Action{{Kind: ActPauseSubject}, {Kind: ActResumeSubject}}}
	tests := []struct {
		name string
		subj Subject
		skip string
	}{
		{"can pause", pausable{namedSubject: "op"}, ""},
		{"cannot say", namedSubject("op"), "subject op cannot be paused or restarted by the harness (pause-subject)"},
		{"refuses", pausable{"external", errors.New("it only observes")}, "subject external cannot be paused or restarted by the harness (pause-subject): it only observes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := (&caseRun{s: sc, subj: tc.subj}).checkCapabilities()
			var skip *skipError
			switch {
			case tc.skip == "" && err != nil:
				t.Errorf("unexpected %v", err)
			case tc.skip != "" && (!errors.As(err, &skip) || skip.reason != tc.skip):
				t.Errorf("got %v, want skip %q", err, tc.skip)
			}
		})
	}
}

// A node cap that drops a node an action targets skips the case; one that
// only shrinks "all" does not.
func TestCapDropsTargets(t *testing.T) {
	sweep := &Scenario{Name: "boundary-sweep", Nodes: 5, Actions: []Action{
		{Kind: ActReboot, On: Target{Indexes: []int{0}}, Line: 9},
		{Kind: ActReboot, On: Target{Indexes: []int{4}}, Line: 13},
	}}
	if got := capDropsTargets(sweep, 3); !strings.Contains(got, "caps scenarios at 3 nodes, but actions[1] reboot (line 13) targets node 4 of 5") {
		t.Errorf("cap 3: %q", got)
	}
	if got := capDropsTargets(sweep, 5); got != "" {
		t.Errorf("cap 5: %q", got)
	}
	storm := &Scenario{Name: "reboot-storm", Nodes: 50, Actions: []Action{{Kind: ActReboot, On: Target{All: true}}}}
	if got := capDropsTargets(storm, 10); got != "" {
		t.Errorf("a storm on all nodes, capped: %q", got)
	}
}

// A boot ID change no action asked for is reported as an unplanned
// reboot with its metrics; in a no-reboot control it makes the run
// invalid. A planned reboot is not reported twice.
func TestUnplannedReboot(t *testing.T) {
	s := newScript(t, "recorded")
	s.c.s.Labels = []string{LabelNoReboot}
	s.c.baseBoot = map[string]string{"n0": "a"}
	s.node(corev1.ConditionTrue, "a")
	s.truth("a", "dummy")
	now := time.Now()
	// A planned reboot a -> b ...
	s.c.dis.list = []*judging.Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: now, End: now.Add(time.Second), Completed: true,
		Outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: "b"}}}
	s.truth("b")
	s.node(corev1.ConditionTrue, "b")
	s.truth("b", "dummy")
	if err := s.c.checkUnplanned(s.c.rebootMetrics()); err != nil {
		t.Fatalf("a planned reboot taken for an unplanned one: %v", err)
	}
	// ... then one nobody asked for, b -> c, reloaded.
	time.Sleep(5 * time.Millisecond)
	s.truth("c")
	s.node(corev1.ConditionTrue, "c")
	s.truth("c", "dummy")
	ms := s.c.rebootMetrics()
	if len(ms) != 2 || !ms[0].Planned || ms[1].Planned || ms[1].OldBootID != "b" || ms[1].NewBootID != "c" || ms[1].DowntimeMS != -1 || ms[1].ReloadLatencyMS < 0 {
		t.Fatalf("metrics %+v", ms)
	}
	err := s.c.checkUnplanned(ms)
	d := decide("kubelet-restart-no-reboot", "bootid", Expectation{Outcome: Pass}, nil, err)
	verdict, msg := d.Verdict, d.Message
	if verdict != Error || !strings.Contains(msg, "invalid run: unplanned reboot (node n0 from boot b to c at") || !strings.Contains(msg, "the control no longer tests what it claims") {
		t.Errorf("verdict %s: %s", verdict, msg)
	}
	// The current boot is the unplanned one: reload is judged there.
	later := time.Now().Add(2 * time.Second) // after the planned reboot's end
	if got := judging.WantBoot(s.c.facts(later), s.c.obs.NodeRecord("n0"), "n0", later); got != "c" {
		t.Errorf("current boot %q, want c", got)
	}
	// Outside a no-reboot control it is reported, not an error.
	s.c.s.Labels = nil
	if err := s.c.checkUnplanned(ms); err != nil {
		t.Errorf("unplanned reboot in a reboot scenario: %v", err)
	}
}

// results.json from before unplanned reboots were reported reads as
// planned.
func TestRebootMetricPlannedDefault(t *testing.T) {
	var old, now RebootMetric
	if err := json.Unmarshal([]byte(`{"node":"n0","new_boot_id":"b"}`), &old); err != nil || !old.Planned {
		t.Errorf("old metric: %+v %v", old, err)
	}
	if err := json.Unmarshal([]byte(`{"node":"n0","planned":false}`), &now); err != nil || now.Planned {
		t.Errorf("unplanned metric: %+v %v", now, err)
	}
}

// A fast precondition is evidence only when the Lease kept being renewed:
// a pause longer than the grace period means NotReady could have been
// missed, which makes the run invalid.
func TestPreconditionFastNeedsRenewals(t *testing.T) {
	// renewedAt scripts a case whose Lease was seen renewed at each of
	// the times given, in seconds before now.
	renewedAt := func(baseAgo time.Duration, agos ...time.Duration) *script {
		s := newScript(t, "fast")
		now := time.Now()
		s.c.baseAt = now.Add(-baseAgo * time.Second)
		clk := clocktesting.NewFakePassiveClock(s.c.baseAt)
		obs, err := observe.New(observe.Config{Start: s.c.start, Nodes: s.c.names, GroundTruth: scriptedBackend{}, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		s.c.obs = obs
		for _, ago := range agos {
			at := now.Add(-ago * time.Second)
			clk.SetTime(at)
			obs.Observe(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}})
		}
		clk.SetTime(now)
		s.node(corev1.ConditionTrue, "a")
		return s
	}
	s := renewedAt(20, 19, 17, 15, 3, 1) // nothing seen from 15s to 3s ago: 12s > grace 10s
	s.c.checkPrecondition()
	wantFail(t, s.result(AssertPrecondition), "no renewal of its Lease was seen for 12.0s")

	ok := renewedAt(6, 5, 3, 1)
	ok.c.checkPrecondition()
	if r := ok.result(AssertPrecondition); !r.OK {
		t.Errorf("renewals every 2s: %+v", r)
	}
}

// A watch gap between the first disruption and the judgement makes the
// case invalid, with each gap named; which gaps overlap the case is the
// observer's (observe.TestGaps).
func TestObservationGap(t *testing.T) {
	now := time.Now()
	start := now.Add(-10 * time.Second)
	err := gapError([]observe.WatchGap{{What: "Pods", From: now.Add(-4 * time.Second), To: now.Add(-3 * time.Second), Err: "watch expired (410 Gone): too old resource version"},
		{What: "Nodes", From: now.Add(-time.Second), Err: "connection refused"}}, start)
	d := decide("kubelet-restart-no-reboot", "legacy", Expectation{Outcome: Fail}, []AssertionResult{{Name: AssertNoExtraWork, OK: true}}, err)
	verdict, msg := d.Verdict, d.Message
	for _, want := range []string{"invalid run: observation gap: the Pods watch was broken from 6.0s to 7.0s (watch expired (410 Gone)",
		"; the Nodes watch was broken from 9.0s to the judgement (connection refused)"} {
		if verdict != Error || !strings.Contains(msg, want) {
			t.Errorf("verdict %s: %s\nwant %q", verdict, msg, want)
		}
	}
	if err := gapError(nil, start); err != nil {
		t.Errorf("no gap: %v", err)
	}
	// The window checkObservation asks the observer for opens at the
	// first disruption's start, else when the nodes were up.
	w := newScript(t, "fast")
	w.c.baseAt = now.Add(-8 * time.Second)
	if got := w.c.firstDisruption(); !got.Equal(w.c.baseAt) {
		t.Errorf("no disruption: the window opens at %v, want the base %v", got, w.c.baseAt)
	}
	d1 := w.c.dis.begin("n0", ActReboot, time.Second)
	if got := w.c.firstDisruption(); !got.Equal(w.c.baseAt) {
		t.Errorf("a disruption not started yet: the window opens at %v, want the base", got)
	}
	w.c.dis.started(d1, now.Add(-5*time.Second))
	w.c.dis.started(w.c.dis.begin("n0", ActRestartKubelet, time.Second), now.Add(-2*time.Second))
	if got := w.c.firstDisruption(); !got.Equal(now.Add(-5 * time.Second)) {
		t.Errorf("the window opens at %v, want the first disruption's start", got)
	}
	// Wired: no gap, no error; an unreadable ground truth is a fault.
	s := newScript(t, "fast")
	if err := s.c.checkObservation(now); err != nil {
		t.Errorf("an observer with no gap: %v", err)
	}
	s.c.obs.Observe(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n0", Annotations: map[string]string{observetest.Annotation: "{"}}})
	err = s.c.checkObservation(now)
	if d := decide("kubelet-restart-no-reboot", "legacy", Expectation{Outcome: Fail}, nil, err); d.Verdict != Error || !isFault(err) ||
		!strings.Contains(d.Message, "node n0: read the ground truth on its Lease") {
		t.Errorf("an unreadable ground truth: %s: %s", d.Verdict, d.Message)
	}
}

// A finished worker pod whose deletion began but which a finalizer keeps
// has not ended: workers-finish waits for it and fails when it stays (a
// subject that never releases the pods of a deleted NodeModulesConfig).
// A deleted NodeModulesConfig leaves its node without spec or status.
func TestWorkerKeptByAFinalizerHasNotEnded(t *testing.T) {
	s := newScript(t, "recorded")
	s.node(corev1.ConditionTrue, "a")
	s.loadPod("1", "Load", "a")
	if got := s.c.obs.ActiveWorkers(); len(got) != 0 {
		t.Fatalf("ActiveWorkers = %v for a Succeeded pod", got)
	}
	kept := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kmm-worker-n0-dummy", UID: "1", DeletionTimestamp: ptrTo(metav1.Now()),
		Finalizers: []string{"kmm.node.kubernetes.io/nodemodulesconfig-reconciler"},
		Labels:     map[string]string{contract.WorkerActionLabel: "Load"}, Annotations: map[string]string{contract.WorkerConfigAnnotation: "modprobe:\n  moduleName: dummy\n"}},
		Spec: corev1.PodSpec{NodeName: "n0"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	s.c.obs.Observe(kept)
	r, err := s.c.waitWorkersDone(context.Background(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	wantFail(t, r, "worker pod kmm-worker-n0-dummy (Load dummy, Succeeded) still there, its deletion begun: a finalizer keeps it")
	s.c.obs.ObserveDeleted(kept)
	if r, err := s.c.waitWorkersDone(context.Background(), 300*time.Millisecond); err != nil || !r.OK {
		t.Errorf("after the pod is gone: %+v, %v; want workers-finish held", r, err)
	}

	s.status("a")
	if sn := s.c.obs.Snapshot("n0"); len(sn.Status) != 1 {
		t.Fatalf("status %v, want the entry", sn.Status)
	}
	nmc := &unstructured.Unstructured{}
	nmc.SetName("n0")
	s.c.obs.ObserveDeleted(cache.DeletedFinalStateUnknown{Key: "n0", Obj: nmc})
	if sn := s.c.obs.Snapshot("n0"); len(sn.Status) != 0 {
		t.Errorf("status %v after the NodeModulesConfig was deleted, want none", sn.Status)
	}
}
