package fakes_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/nodeapi"
)

// The unit tests below run the kubelet against a fake clientset on a fake
// clock: time moves only when a test steps it, so each runs in
// milliseconds. After every step a test waits until the kubelet is idle
// again: every loop that should run waits on the clock (the clock's
// waiter count is back to what the test expects), so whatever the step
// set off has reached the fake API by then.

var unitStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// unitTiming is the kubelet-defaults profile without jitter and with
// whole-second pod latencies (pod status times have second precision):
// renew and status every 10s, report every 5m, pod start 1s, worker
// action 2s.
func unitTiming() fakes.Timing {
	t := fakes.TimingProfiles[nodeapi.TimingKubeletDefaults]
	t.RenewJitter = 0
	t.ActionLatency = 2 * time.Second
	return t
}

// watchedClock is a fake clock that counts timers asked for with a
// duration that has already passed: on the real clock such a timer fires
// at once, and a loop that keeps asking for one spins.
type watchedClock struct {
	*testingclock.FakeClock
	expired atomic.Int64
}

func (c *watchedClock) NewTimer(d time.Duration) clock.Timer {
	if d <= 0 {
		c.expired.Add(1)
	}
	return c.FakeClock.NewTimer(d)
}

func (c *watchedClock) After(d time.Duration) <-chan time.Time {
	if d <= 0 {
		c.expired.Add(1)
	}
	return c.FakeClock.After(d)
}

// podFeed is a PodSource the test feeds by hand.
type podFeed struct {
	mu sync.Mutex
	h  fakes.PodEventHandler
}

func (f *podFeed) Subscribe(_ string, h fakes.PodEventHandler) func() {
	f.mu.Lock()
	f.h = h
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.h = nil
		f.mu.Unlock()
	}
}

func (f *podFeed) send(pod *corev1.Pod) {
	f.mu.Lock()
	h := f.h
	f.mu.Unlock()
	h(pod, false)
}

// unitKubelet is one kubelet on a fake clock and a fake clientset.
type unitKubelet struct {
	t      *testing.T
	clock  *watchedClock
	client *fake.Clientset
	kern   *fakes.SimKernel
	kl     *fakes.Kubelet
	pods   *podFeed
	stop   func() // ends Start and waits for it
}

// startUnit starts a kubelet for node n1 and waits until it registered
// and its lease and status loops wait on the clock.
func startUnit(t *testing.T) *unitKubelet { t.Helper(); return startUnitWith(t, nil) }

// startUnitWith is startUnit with the kubelet's Config changed by edit.
func startUnitWith(t *testing.T, edit func(*fakes.Config)) *unitKubelet {
	t.Helper()
	u := &unitKubelet{t: t, clock: &watchedClock{FakeClock: testingclock.NewFakeClock(unitStart)},
		client: fake.NewSimpleClientset(), pods: &podFeed{}}
	// The fake clientset does not generate names; the kubelet's events
	// ask for one.
	var seq atomic.Int64
	u.client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ev, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Event); ok && ev.Name == "" {
			ev.Name = ev.GenerateName + strconv.FormatInt(seq.Add(1), 10)
		}
		return false, nil, nil
	})
	var err error
	if u.kern, err = fakes.NewSimKernel(fakes.SimKernelConfig{Clock: u.clock}); err != nil {
		t.Fatal(err)
	}
	cfg := fakes.Config{NodeName: "n1", Client: u.client, Kernel: u.kern,
		Timing: unitTiming(), Pods: u.pods, Clock: u.clock}
	if edit != nil {
		edit(&cfg)
	}
	u.kl, err = fakes.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.kl.Start(ctx) }()
	var once sync.Once
	u.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Start: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Start did not return within 5s of its context's end")
			}
		})
	}
	t.Cleanup(u.stop)
	select {
	case <-u.kl.Registered():
	case err := <-done:
		t.Fatalf("Start: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("not registered within 5s")
	}
	u.settle(2) // the lease timer and the status timer
	return u
}

// waitFor polls cond (in real time) for up to 5s.
func (u *unitKubelet) waitFor(what string, cond func() bool) {
	u.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			u.t.Fatalf("%s: not within 5s (fake time %s, %d clock waiters)", what, u.elapsed(), u.clock.Waiters())
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// settle waits until exactly n timers wait on the clock.
func (u *unitKubelet) settle(n int) {
	u.t.Helper()
	u.waitFor(strconv.Itoa(n)+" clock waiters", func() bool { return u.clock.Waiters() == n })
}

// step moves the fake clock by d and waits until n timers wait on it.
func (u *unitKubelet) step(d time.Duration, n int) {
	u.t.Helper()
	u.clock.Step(d)
	u.settle(n)
}

func (u *unitKubelet) elapsed() time.Duration { return u.clock.Since(unitStart) }

func (u *unitKubelet) node() *corev1.Node {
	u.t.Helper()
	n, err := u.client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	return n
}

func (u *unitKubelet) ready() corev1.NodeCondition {
	u.t.Helper()
	for _, c := range u.node().Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	u.t.Fatal("node n1 has no Ready condition")
	return corev1.NodeCondition{}
}

// renewTime is the Lease's renewTime as time since the start.
func (u *unitKubelet) renewTime() time.Duration {
	u.t.Helper()
	l, err := u.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	return l.Spec.RenewTime.Sub(unitStart)
}

// writes counts the API writes (anything but get, list and watch) to
// resource.
func (u *unitKubelet) writes(resource string) int {
	n := 0
	for _, a := range u.client.Actions() {
		if a.GetResource().Resource == resource && !slices.Contains([]string{"get", "list", "watch"}, a.GetVerb()) {
			n++
		}
	}
	return n
}

// reads counts the gets of resource.
func (u *unitKubelet) reads(resource string) int {
	n := 0
	for _, a := range u.client.Actions() {
		if a.GetResource().Resource == resource && a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

func (u *unitKubelet) events(reason string) []corev1.Event {
	u.t.Helper()
	evs, err := u.client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range evs.Items {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// wait returns what done delivers within 5s.
func wait(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return within 5s", what)
		return nil
	}
}

func TestUnitStartPostsReadyWithBootID(t *testing.T) {
	u := startUnit(t)
	n := u.node()
	if got := n.Status.NodeInfo.BootID; got == "" || got != u.kern.BootID() {
		t.Errorf("node bootID %q, kernel's %q", got, u.kern.BootID())
	}
	if got := n.Status.NodeInfo.KernelVersion; got != u.kern.Version() {
		t.Errorf("node kernelVersion %q, kernel's %q", got, u.kern.Version())
	}
	ready := u.ready()
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" || !ready.LastHeartbeatTime.Time.Equal(unitStart) {
		t.Errorf("Ready condition %+v, want True (KubeletReady) with heartbeat at the start", ready)
	}
	l, err := u.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(unitStart) {
		t.Errorf("lease spec %+v, want holder n1, 40s, renewed at the start", l.Spec)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].Name != "n1" {
		t.Errorf("lease owners %+v, want Node n1", l.OwnerReferences)
	}
	g, err := contract.ReadGroundTruth(l)
	if err != nil || g == nil || g.BootID != u.kern.BootID() || !g.PublishedAt.Equal(unitStart) {
		t.Errorf("ground truth %+v (%v), want boot %s published at the start", g, err, u.kern.BootID())
	}
	if s := u.kl.Stats(); s.Boots != 1 || s.StatusPosts != 1 || s.LeaseRenewals != 1 {
		t.Errorf("stats %+v, want one boot, one status post, one renewal", s)
	}
}

func TestUnitLeaseRenewedEveryRenewInterval(t *testing.T) {
	u := startUnit(t)
	renew := unitTiming().RenewInterval
	for i := 1; i <= 3; i++ {
		u.step(renew-time.Second, 2)
		if got := u.kl.Stats().LeaseRenewals; got != i {
			t.Fatalf("at %s: %d renewals, want %d (renewed before the renew interval)", u.elapsed(), got, i)
		}
		u.step(time.Second, 2)
		if got := u.kl.Stats().LeaseRenewals; got != i+1 {
			t.Fatalf("at %s: %d renewals, want %d", u.elapsed(), got, i+1)
		}
		if got, want := u.renewTime(), time.Duration(i)*renew; got != want {
			t.Errorf("renewTime %s after the start, want %s", got, want)
		}
	}
	if late := u.kl.Stats().LateRenewals; len(late) != 3 || slices.ContainsFunc(late, func(d time.Duration) bool { return d != 0 }) {
		t.Errorf("lateness of scheduled renewals %v, want three zeros on a fake clock", late)
	}
}

func TestUnitStatusReportedEveryReportInterval(t *testing.T) {
	u := startUnit(t)
	tm := unitTiming()
	ticks := int(tm.ReportInterval / tm.StatusInterval)
	reads := u.reads("nodes")
	for i := 1; i < ticks; i++ {
		u.step(tm.StatusInterval, 2)
		if got := u.reads("nodes") - reads; got != i {
			t.Fatalf("at %s: %d node reads, want %d (status computed every %s)", u.elapsed(), got, i, tm.StatusInterval)
		}
	}
	if s := u.kl.Stats().StatusPosts; s != 1 {
		t.Fatalf("%d status posts before the report interval, want only the registration", s)
	}
	u.step(tm.StatusInterval, 2)
	if s := u.kl.Stats().StatusPosts; s != 2 {
		t.Fatalf("%d status posts after the report interval %s, want 2", s, tm.ReportInterval)
	}
	ready := u.ready()
	if !ready.LastHeartbeatTime.Time.Equal(unitStart.Add(tm.ReportInterval)) || !ready.LastTransitionTime.Time.Equal(unitStart) {
		t.Errorf("Ready heartbeat %s, transition %s; want heartbeat at +%s and the transition kept at the start",
			ready.LastHeartbeatTime, ready.LastTransitionTime, tm.ReportInterval)
	}
}

func TestUnitStatusPostedOnChange(t *testing.T) {
	u := startUnit(t)
	// The node lifecycle controller marks the node Unknown.
	n := u.node()
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
		}
	}
	if _, err := u.client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.step(unitTiming().StatusInterval-time.Second, 2)
	if got := u.ready().Status; got != corev1.ConditionUnknown {
		t.Fatalf("Ready %s before the status interval, want Unknown untouched", got)
	}
	u.step(time.Second, 2)
	ready := u.ready()
	at := unitStart.Add(unitTiming().StatusInterval)
	if ready.Status != corev1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(at) {
		t.Errorf("Ready %+v, want True again at the next status interval, transition at +%s", ready, unitTiming().StatusInterval)
	}
	if s := u.kl.Stats().StatusPosts; s != 2 {
		t.Errorf("%d status posts, want 2", s)
	}
}

func TestUnitRebootNewBootIDAfterNotReadyBlip(t *testing.T) {
	u := startUnit(t)
	oldBoot := u.kern.BootID()
	u.step(3*time.Second, 2)
	done := make(chan error, 1)
	go func() {
		done <- u.kl.Reboot(context.Background(), fakes.RebootSpec{Downtime: 30 * time.Second, AfterRenewal: true,
			Startup: fakes.Startup{NotReadyFor: 5 * time.Second}})
	}()
	// Down: the kernel halted, the downtime and the dead status loop's
	// last timer wait on the clock.
	u.waitFor("node down", func() bool { return u.kern.BootID() == "" && u.clock.Waiters() == 2 })
	if got := u.renewTime(); got != 3*time.Second {
		t.Errorf("last renewal at +%s, want right before going down at +3s", got)
	}
	leaseWrites, nodeWrites := u.writes("leases"), u.writes("nodes")
	u.step(29*time.Second, 1)
	if u.writes("leases") != leaseWrites || u.writes("nodes") != nodeWrites {
		t.Errorf("writes while the node is down: leases %d -> %d, nodes %d -> %d", leaseWrites, u.writes("leases"), nodeWrites, u.writes("nodes"))
	}
	if got := u.node().Status.NodeInfo.BootID; got != oldBoot {
		t.Errorf("node bootID %s before the new boot, want the old %s", got, oldBoot)
	}
	u.clock.Step(time.Second)
	if err := wait(t, "Reboot", done); err != nil {
		t.Fatal(err)
	}
	u.settle(3) // lease, status, end of the startup blip
	newBoot := u.kern.BootID()
	if newBoot == "" || newBoot == oldBoot || u.node().Status.NodeInfo.BootID != newBoot {
		t.Fatalf("boot IDs: old %s, kernel %s, node %s", oldBoot, newBoot, u.node().Status.NodeInfo.BootID)
	}
	if r := u.ready(); r.Status != corev1.ConditionFalse || r.Reason != "KubeletNotReady" || r.Message != fakes.NotReadyBlipMessage {
		t.Errorf("Ready at the new boot's start %+v, want False (KubeletNotReady)", r)
	}
	if evs := u.events("Rebooted"); len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, newBoot) {
		t.Errorf("Rebooted events %+v, want one Warning naming %s", evs, newBoot)
	}
	if got := u.renewTime(); got != 33*time.Second {
		t.Errorf("first renewal of the new boot at +%s, want +33s", got)
	}
	posts := u.kl.Stats().StatusPosts
	u.step(4*time.Second, 3)
	if r := u.ready(); r.Status != corev1.ConditionFalse || u.kl.Stats().StatusPosts != posts {
		t.Errorf("Ready %s 4s into a 5s blip", r.Status)
	}
	// The blip's end is a one-shot timer: wait for its post.
	u.clock.Step(time.Second)
	u.waitFor("status post at the blip's end", func() bool { return u.kl.Stats().StatusPosts == posts+1 })
	if r := u.ready(); r.Status != corev1.ConditionTrue || !r.LastTransitionTime.Time.Equal(unitStart.Add(38*time.Second)) {
		t.Errorf("Ready %+v after the blip, want True since +38s", r)
	}
	if s := u.kl.Stats(); s.Boots != 2 {
		t.Errorf("kubelet starts %d, want 2", s.Boots)
	}
}

func TestUnitRestartKubeletKeepsBoot(t *testing.T) {
	u := startUnit(t)
	if err := u.kern.Load("dummy"); err != nil {
		t.Fatal(err)
	}
	boot := u.kern.BootID()
	done := make(chan error, 1)
	go func() { done <- u.kl.RestartKubelet(context.Background(), 20*time.Second) }()
	u.waitFor("kubelet down", func() bool { return u.kl.Down() && u.clock.Waiters() == 2 })
	leaseWrites, nodeWrites := u.writes("leases"), u.writes("nodes")
	u.step(10*time.Second, 1)
	if u.writes("leases") != leaseWrites || u.writes("nodes") != nodeWrites {
		t.Errorf("writes while the kubelet is down: leases %d -> %d, nodes %d -> %d", leaseWrites, u.writes("leases"), nodeWrites, u.writes("nodes"))
	}
	u.clock.Step(10 * time.Second)
	if err := wait(t, "RestartKubelet", done); err != nil {
		t.Fatal(err)
	}
	u.settle(2)
	if u.kern.BootID() != boot || u.node().Status.NodeInfo.BootID != boot {
		t.Errorf("boot after a kubelet restart: kernel %s, node %s; want %s", u.kern.BootID(), u.node().Status.NodeInfo.BootID, boot)
	}
	if got := names(u.kern.Loaded()); !slices.Equal(got, []string{"dummy"}) {
		t.Errorf("modules after a kubelet restart %v, want dummy kept", got)
	}
	if evs := u.events("Rebooted"); len(evs) != 0 {
		t.Errorf("Rebooted events after a kubelet restart: %+v", evs)
	}
	if got := u.renewTime(); got != 20*time.Second {
		t.Errorf("renewal at +%s, want at the restart, +20s", got)
	}
	if s := u.kl.Stats(); s.Boots != 2 {
		t.Errorf("kubelet starts %d, want 2", s.Boots)
	}
}

func TestUnitStopStopsRenewals(t *testing.T) {
	u := startUnit(t)
	u.step(unitTiming().RenewInterval, 2)
	u.stop()
	actions := len(u.client.Actions())
	renewals := u.kl.Stats().LeaseRenewals
	for range 10 {
		u.clock.Step(unitTiming().RenewInterval)
	}
	time.Sleep(10 * time.Millisecond) // a loop still running would be at work by now
	if got := len(u.client.Actions()); got != actions {
		t.Errorf("%d API calls after Start returned, want none: %v", got-actions, u.client.Actions()[actions:])
	}
	if got := u.kl.Stats().LeaseRenewals; got != renewals {
		t.Errorf("renewals %d -> %d after Start returned", renewals, got)
	}
	if w := u.clock.Waiters(); w != 0 {
		t.Errorf("%d clock waiters after Start returned and time passed, want 0", w)
	}
}

// TestUnitRebootSupersedesRestart reboots a node whose kubelet is down for
// a restart: the reboot starts the kubelet, and the restart, ending its
// downtime later, starts no second one.
func TestUnitRebootSupersedesRestart(t *testing.T) {
	u := startUnit(t)
	boot := u.kern.BootID()
	restarted := make(chan error, 1)
	go func() { restarted <- u.kl.RestartKubelet(context.Background(), 4*time.Second) }()
	u.waitFor("kubelet down", func() bool { return u.kl.Down() && u.clock.Waiters() == 2 })
	rebooted := make(chan error, 1)
	go func() { rebooted <- u.kl.Reboot(context.Background(), fakes.RebootSpec{Downtime: time.Second}) }()
	u.waitFor("node down", func() bool { return u.kern.BootID() == "" && u.clock.Waiters() == 3 })
	u.clock.Step(time.Second)
	if err := wait(t, "Reboot", rebooted); err != nil {
		t.Fatal(err)
	}
	u.settle(4) // the restart's downtime, the old status timer, the new lease and status timers
	u.clock.Step(3 * time.Second)
	if err := wait(t, "superseded RestartKubelet", restarted); err != nil {
		t.Fatal(err)
	}
	u.settle(3)
	if b := u.kern.BootID(); b == "" || b == boot || u.node().Status.NodeInfo.BootID != b {
		t.Errorf("boot IDs: first %s, kernel %s, node %s", boot, b, u.node().Status.NodeInfo.BootID)
	}
	if s := u.kl.Stats(); s.Boots != 2 {
		t.Errorf("kubelet starts %d, want 2 (the superseded restart starts none)", s.Boots)
	}
	// One kubelet process: one renewal per renew interval.
	renewals := u.kl.Stats().LeaseRenewals
	u.step(6*time.Second, 2) // +10s: the old status timer fires
	u.step(time.Second, 2)   // +11s: the new boot's first scheduled renewal
	if got := u.kl.Stats().LeaseRenewals - renewals; got != 1 {
		t.Errorf("%d renewals in one renew interval, want 1", got)
	}
}

func TestUnitPauseStopsHeartbeatsUntilResume(t *testing.T) {
	u := startUnit(t)
	u.kl.Pause()
	renewals, nodeWrites := u.kl.Stats().LeaseRenewals, u.writes("nodes")
	// The renewal falls due: the lease loop waits for Resume with no
	// timer; the status loop skips its turns.
	u.clock.Step(unitTiming().RenewInterval)
	u.waitFor("loops idle while paused", func() bool { return u.clock.Waiters() == 1 || u.clock.expired.Load() > 0 })
	if n := u.clock.expired.Load(); n != 0 {
		t.Fatalf("%d timers armed already expired while paused: on a real clock the lease loop would spin until Resume", n)
	}
	u.step(unitTiming().StatusInterval, 1)
	if got := u.kl.Stats().LeaseRenewals; got != renewals {
		t.Errorf("renewals %d -> %d while paused", renewals, got)
	}
	if got := u.writes("nodes"); got != nodeWrites {
		t.Errorf("node writes %d -> %d while paused", nodeWrites, got)
	}
	u.kl.Resume()
	u.settle(2)
	time.Sleep(5 * time.Millisecond) // a second renewal would be under way by now
	u.settle(2)
	if got := u.kl.Stats().LeaseRenewals; got != renewals+1 {
		t.Errorf("renewals %d -> %d at Resume, want exactly one at once", renewals, got)
	}
	if got := u.renewTime(); got != 20*time.Second {
		t.Errorf("renewal at +%s, want at the resume, +20s", got)
	}
}

// startWorker creates a Load worker for module dummy and hands it to the
// kubelet; its container starts after the pod start latency.
func (u *unitKubelet) startWorker(name string) {
	u.t.Helper()
	pod := workerPod(name, "n1", contract.ActionLoad, "modprobe:\n  moduleName: dummy\n", corev1.RestartPolicyOnFailure)
	pod.UID = types.UID("uid-" + name)
	created, err := u.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	u.pods.send(created)
}

func (u *unitKubelet) pod(name string) *corev1.Pod {
	u.t.Helper()
	p, err := u.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	return p
}

// waitPhase waits until the pod's phase is phase.
func (u *unitKubelet) waitPhase(name string, phase corev1.PodPhase) *corev1.Pod {
	u.t.Helper()
	var p *corev1.Pod
	u.waitFor("pod "+name+" "+string(phase), func() bool { p = u.pod(name); return p.Status.Phase == phase })
	return p
}

func TestUnitWorkerLoadsInCurrentBoot(t *testing.T) {
	u := startUnit(t)
	u.startWorker("w")
	u.settle(3) // + the pod's start latency
	if p := u.pod("w"); p.Status.Phase != "" {
		t.Errorf("pod phase %s before the start latency passed, want none yet", p.Status.Phase)
	}
	u.step(time.Second, 3) // started; + the action latency
	p := u.pod("w")
	if p.Status.Phase != corev1.PodRunning || p.Status.ContainerStatuses[0].State.Running == nil ||
		!p.Status.ContainerStatuses[0].State.Running.StartedAt.Time.Equal(unitStart.Add(time.Second)) {
		t.Fatalf("pod status %+v after the start latency, want Running since +1s", p.Status)
	}
	if len(u.kern.Loaded()) != 0 {
		t.Errorf("modules loaded before the action latency passed: %v", u.kern.Loaded())
	}
	u.clock.Step(2 * time.Second)
	p = u.waitPhase("w", corev1.PodSucceeded)
	term := terminated(p)
	msg, err := contract.ParseWorkerTerminationMessage(term.Message)
	if err != nil || msg.BootID != u.kern.BootID() || msg.Action != contract.ActionLoad || !slices.Equal(msg.Modules, []string{"dummy"}) ||
		term.ExitCode != 0 || !term.FinishedAt.Time.Equal(unitStart.Add(3*time.Second)) {
		t.Errorf("termination %+v, message %+v (%v); want Load of dummy in boot %s, finished at +3s", term, msg, err, u.kern.BootID())
	}
	if mods := u.kern.Loaded(); len(mods) != 1 || mods[0].Name != "dummy" || !mods[0].LoadedAt.Equal(unitStart.Add(3*time.Second)) {
		t.Errorf("kernel modules %+v, want dummy loaded at +3s", mods)
	}
	// The action's ground truth is published at once, as a renewal.
	u.waitFor("ground truth renewal", func() bool { return u.renewTime() == 3*time.Second })
	l, err := u.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := contract.ReadGroundTruth(l); err != nil || g == nil || !slices.Equal(names(g.Modules), []string{"dummy"}) {
		t.Errorf("ground truth %+v (%v), want dummy", g, err)
	}
	if s := u.kl.Stats(); s.WorkerActions != 1 {
		t.Errorf("worker actions %d, want 1", s.WorkerActions)
	}
}

func TestUnitRunningContainerDiesWithReboot(t *testing.T) {
	u := startUnit(t)
	u.startWorker("w")
	u.settle(3)
	u.step(time.Second, 3) // Running in the first boot; its action is due at +3s
	oldBoot := u.kern.BootID()
	done := make(chan error, 1)
	go func() { done <- u.kl.Reboot(context.Background(), fakes.RebootSpec{Downtime: 2 * time.Second}) }()
	// Down: the downtime and the dead status loop's and worker's timers.
	u.waitFor("node down", func() bool { return u.kern.BootID() == "" && u.clock.Waiters() == 3 })
	u.clock.Step(2 * time.Second)
	if err := wait(t, "Reboot", done); err != nil {
		t.Fatal(err)
	}
	u.settle(4) // the old status timer, the new lease and status timers, the pod's start latency
	if len(u.kern.Loaded()) != 0 {
		t.Fatalf("modules %v: the dead container's action ran", u.kern.Loaded())
	}
	u.step(time.Second, 4) // restarted in the new boot; + the action latency
	st := u.pod("w").Status.ContainerStatuses[0]
	last := st.LastTerminationState.Terminated
	if st.State.Running == nil || st.RestartCount != 1 || last == nil || last.ExitCode != 137 || !strings.Contains(last.Message, oldBoot) {
		t.Fatalf("container %+v, want running again (1 restart) after dying with boot %s", st, oldBoot)
	}
	u.clock.Step(2 * time.Second)
	p := u.waitPhase("w", corev1.PodSucceeded)
	msg, err := contract.ParseWorkerTerminationMessage(terminated(p).Message)
	if err != nil || msg.BootID != u.kern.BootID() || msg.BootID == oldBoot {
		t.Errorf("termination message %+v (%v), want the new boot %s", msg, err, u.kern.BootID())
	}
}

// TestUnitDeletionInterruptedByRebootIsFinished deletes a pod while the
// node is cut off, then reboots the node: the new boot's kubelet finishes
// the deletion the old one could not make.
func TestUnitDeletionInterruptedByRebootIsFinished(t *testing.T) {
	u := startUnit(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-app",
		DeletionTimestamp: ptr.To(metav1.NewTime(unitStart))},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
	created, err := u.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.kl.Pause()
	u.pods.send(created)
	done := make(chan error, 1)
	go func() { done <- u.kl.Reboot(context.Background(), fakes.RebootSpec{Downtime: time.Second}) }()
	u.waitFor("node down", func() bool { return u.kern.BootID() == "" && u.clock.Waiters() == 2 })
	u.clock.Step(time.Second)
	u.kl.Resume()
	if err := wait(t, "Reboot", done); err != nil {
		t.Fatal(err)
	}
	u.waitFor("pod app deleted", func() bool { return u.writes("pods") == 2 }) // its create and the kubelet's delete
	if _, err := u.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{}); err == nil {
		t.Error("pod app still there after the new boot's kubelet started")
	}
}

// TestLeaseWritesDoNotRace: the kubelet's Lease writers (the renewal
// loop, a reboot's last renewal) take turns, so a slow API server with
// optimistic locking never fails them with conflicts.
func TestLeaseWritesDoNotRace(t *testing.T) {
	u := startUnit(t)
	var mu sync.Mutex
	u.client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		in := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		time.Sleep(5 * time.Millisecond) // a slow API server: writes overlap
		mu.Lock()
		defer mu.Unlock()
		cur, err := u.client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), in.Namespace, in.Name)
		if err != nil {
			return true, nil, err
		}
		if rv := cur.(*coordinationv1.Lease).ResourceVersion; rv != in.ResourceVersion {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), in.Name, fmt.Errorf("resourceVersion %s, not %s", rv, in.ResourceVersion))
		}
		out := in.DeepCopy()
		n, _ := strconv.Atoi(in.ResourceVersion)
		out.ResourceVersion = strconv.Itoa(n + 1)
		if err := u.client.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), out, out.Namespace); err != nil {
			return true, nil, err
		}
		return true, out, nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- u.kl.RenewLease(context.Background()) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent renewal: %v", err)
		}
	}
}

// TestStatusReadsFromWatchCache: the status loop reads its Node at
// resourceVersion 0 (the API server's watch cache), as the kubelet does,
// not with a quorum read every interval.
func TestStatusReadsFromWatchCache(t *testing.T) {
	u := startUnit(t)
	u.client.ClearActions()
	u.step(unitTiming().StatusInterval, 2)
	gets := 0
	for _, a := range u.client.Actions() {
		g, ok := a.(k8stesting.GetActionImpl)
		if !ok || g.GetResource().Resource != "nodes" {
			continue
		}
		gets++
		if g.GetOptions.ResourceVersion != "0" {
			t.Errorf("status read of node %s at resourceVersion %q, want \"0\"", g.Name, g.GetOptions.ResourceVersion)
		}
	}
	if gets == 0 {
		t.Error("no status read of the node in a status interval")
	}
}

// TestUnitWorkerActionCountsFromRunningPublished: when publishing Running
// takes longer than the action (a loaded API server), the action still
// ends the action latency after Running was published, never before it
// could be seen: a scenario that reboots a node while its loader pod is
// Running must reboot before the load.
func TestUnitWorkerActionCountsFromRunningPublished(t *testing.T) {
	u := startUnit(t)
	var slowed atomic.Bool
	u.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p, ok := a.(k8stesting.PatchAction)
		if ok && p.GetSubresource() == "status" && strings.Contains(string(p.GetPatch()), `"running"`) && slowed.CompareAndSwap(false, true) {
			u.clock.Step(3 * time.Second) // the write of Running takes 3s
		}
		return false, nil, nil
	})
	u.startWorker("w")
	u.settle(3)
	u.clock.Step(time.Second) // started at +1s; Running published at +4s
	u.waitPhase("w", corev1.PodRunning)
	u.settle(3)
	if !slowed.Load() {
		t.Fatal("the Running status was not written through the slow patch")
	}
	if mods := u.kern.Loaded(); len(mods) != 0 {
		t.Fatalf("modules %+v loaded as Running was published: the action counted from the container's start", mods)
	}
	u.clock.Step(2 * time.Second)
	u.waitPhase("w", corev1.PodSucceeded)
	if mods := u.kern.Loaded(); len(mods) != 1 || !mods[0].LoadedAt.Equal(unitStart.Add(6*time.Second)) {
		t.Errorf("kernel modules %+v, want dummy loaded at +6s (Running published at +4s, then the 2s action)", mods)
	}
}

// nodeReaderFunc adapts a function to fakes.NodeReader.
type nodeReaderFunc func(name string) (*corev1.Node, error)

func (f nodeReaderFunc) Node(name string) (*corev1.Node, error) { return f(name) }

// TestStatusReadsFromNodeReader: a kubelet given a NodeReader (a fleet's
// shared Node informer) reads its Node from it every status interval, as
// a kubelet reads its node lister, and sends no GET for it.
func TestStatusReadsFromNodeReader(t *testing.T) {
	var reads atomic.Int64
	u := startUnitWith(t, func(c *fakes.Config) {
		cs := c.Client.(*fake.Clientset)
		c.Nodes = nodeReaderFunc(func(name string) (*corev1.Node, error) {
			reads.Add(1)
			obj, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
			if err != nil {
				return nil, err
			}
			return obj.(*corev1.Node), nil
		})
	})
	u.client.ClearActions()
	before := reads.Load()
	u.step(unitTiming().StatusInterval, 2)
	for _, a := range u.client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "nodes" {
			t.Errorf("status loop sent %s %s; want its Node from the NodeReader", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if reads.Load() == before {
		t.Error("no read from the NodeReader in two status intervals")
	}
}

// TestUnitFailedPodWritesMadeAgain: a pod write the API server did not
// take (a request cut off by a paused VM, a timeout) is made again a
// status interval later, as the kubelet's status manager syncs it again,
// without waiting for a pod event that may never come. A dropped
// terminal status would leave a worker Running for good, and its
// operator would never record the load.
func TestUnitFailedPodWritesMadeAgain(t *testing.T) {
	plain := func(deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-app"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
		if deleting {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(unitStart))
		}
		return p
	}
	send := func(u *unitKubelet, p *corev1.Pod) {
		created, err := u.client.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.pods.send(created)
	}
	gone := func(u *unitKubelet, name string) bool {
		_, err := u.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	phase := func(name string, want corev1.PodPhase) func(*unitKubelet) bool {
		return func(u *unitKubelet) bool { return u.pod(name).Status.Phase == want }
	}
	for _, tt := range []struct {
		name string
		// verb and contains pick the write to fail once.
		verb, contains string
		// start sets the write off; the test then waits for its failure.
		start func(*unitKubelet)
		// before holds after the failure, done once the write is made.
		before, done func(*unitKubelet) bool
	}{
		{name: "terminal status of a worker", verb: "patch", contains: string(corev1.PodSucceeded),
			start: func(u *unitKubelet) {
				u.startWorker("w")
				u.settle(3)
				u.step(time.Second, 3) // Running; + the action latency
				u.clock.Step(2 * time.Second)
			},
			before: phase("w", corev1.PodRunning), done: phase("w", corev1.PodSucceeded)},
		{name: "rejection of a pod that is not a worker", verb: "patch", contains: fakes.SimulatedNodeReason,
			start:  func(u *unitKubelet) { send(u, plain(false)) },
			before: phase("app", ""), done: phase("app", corev1.PodFailed)},
		{name: "deletion of a stopped pod", verb: "delete",
			start:  func(u *unitKubelet) { send(u, plain(true)) },
			before: func(u *unitKubelet) bool { return !gone(u, "app") }, done: func(u *unitKubelet) bool { return gone(u, "app") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := startUnit(t)
			var failed atomic.Int64
			u.client.PrependReactor(tt.verb, "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if pa, ok := a.(k8stesting.PatchAction); ok && !strings.Contains(string(pa.GetPatch()), tt.contains) {
					return false, nil, nil
				}
				if failed.CompareAndSwap(0, 1) {
					return true, nil, fmt.Errorf("http2: client connection lost")
				}
				return false, nil, nil
			})
			tt.start(u)
			u.waitFor("the write to fail", func() bool { return failed.Load() == 1 })
			u.waitFor("a retry timer beside the lease and status timers (else the failed write is dropped)",
				func() bool { return u.clock.Waiters() == 3 })
			if !tt.before(u) {
				t.Fatal("the pod shows what the failed write wanted before any write was made again")
			}
			u.clock.Step(unitTiming().StatusInterval)
			u.waitFor("the write made again a status interval later", func() bool { return tt.done(u) })
		})
	}
}

// TestUnitGroundTruthCountsLoads: every worker action is counted in the
// ground truth of its boot, a load of a module already loaded included,
// so that no-extra-work sees a second load whichever pod made it.
func TestUnitGroundTruthCountsLoads(t *testing.T) {
	u := startUnit(t)
	for i, name := range []string{"w1", "w2"} {
		u.startWorker(name)
		u.settle(3)
		u.step(time.Second, 3) // started; + the action latency
		u.clock.Step(2 * time.Second)
		u.waitPhase(name, corev1.PodSucceeded)
		want := []contract.ModuleActions{{Module: "dummy", Loads: i + 1}}
		u.waitFor("ground truth with the loads counted", func() bool {
			l, err := u.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "n1", metav1.GetOptions{})
			if err != nil {
				return false
			}
			g, err := contract.ReadGroundTruth(l)
			return err == nil && g != nil && slices.Equal(g.Actions, want)
		})
	}
}

// TestUnitStartDelayAnnotation: a pod asking for a start delay starts that
// much after the pod start latency.
func TestUnitStartDelayAnnotation(t *testing.T) {
	u := startUnit(t)
	pod := workerPod("w", "n1", contract.ActionLoad, "modprobe:\n  moduleName: dummy\n", corev1.RestartPolicyOnFailure)
	pod.UID = "uid-w"
	pod.Annotations[contract.StartDelayAnnotation] = "3s"
	created, err := u.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.pods.send(created)
	u.settle(3)
	u.step(time.Second, 3) // the pod start latency alone: not started yet
	if p := u.pod("w"); p.Status.Phase == corev1.PodRunning {
		t.Fatalf("pod Running after the start latency alone, want it held 3s more")
	}
	u.clock.Step(3 * time.Second)
	p := u.waitPhase("w", corev1.PodRunning)
	if got := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time; !got.Equal(unitStart.Add(4 * time.Second)) {
		t.Errorf("started at %s, want +4s (1s latency + 3s delay)", got.Sub(unitStart))
	}
}
