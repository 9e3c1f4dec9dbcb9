package observe

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/observe/observetest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTest(t *testing.T, clk *clocktesting.FakePassiveClock) *Observer {
	t.Helper()
	cfg := Config{Start: t0, Nodes: []string{"n0"}, GroundTruth: observetest.Reader{}}
	if clk != nil {
		cfg.Clock = clk
	}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func node(name string, ready corev1.ConditionStatus, boot string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}, NodeInfo: corev1.NodeSystemInfo{BootID: boot}}}
}

// A Record is a copy: what the observer sees later does not change it.
func TestRecordIsACopy(t *testing.T) {
	o := newTest(t, nil)
	o.Observe(node("n0", corev1.ConditionTrue, "a"))
	r := o.Record()
	o.Observe(node("n0", corev1.ConditionUnknown, "b"))
	if n := r.Nodes["n0"]; len(n.NotReadyAt) != 0 || len(n.BootSeen) != 1 {
		t.Errorf("record changed after it was taken: %+v", n)
	}
	if n := o.Record().Nodes["n0"]; len(n.NotReadyAt) != 1 || len(n.BootSeen) != 2 {
		t.Errorf("a new record misses the later events: %+v", n)
	}
}

// Every observation carries the observer's clock, not the object's
// times: a renewal is when it was seen.
func TestObservationsTakeTheClock(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0.Add(3 * time.Second))
	o := newTest(t, clk)
	renew := func(at time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}}
	}
	o.Observe(renew(t0))
	clk.SetTime(t0.Add(5 * time.Second))
	o.Observe(renew(t0)) // not renewed again: not a renewal
	o.Observe(renew(t0.Add(time.Second)))
	o.Observe(node("other", corev1.ConditionTrue, "x")) // not observed
	got := o.NodeRecord("n0").RenewSeen
	if len(got) != 2 || !got[0].Equal(t0.Add(3*time.Second)) || !got[1].Equal(t0.Add(5*time.Second)) {
		t.Errorf("renewals seen at %v, want 3s and 5s after the start", got)
	}
	clk.SetTime(t0.Add(7 * time.Second))
	o.Observe(node("n0", corev1.ConditionFalse, "b"))
	if r := o.NodeRecord("n0"); !r.BootSeen["b"].Equal(t0.Add(7*time.Second)) || len(r.NotReadyAt) != 1 || !r.NotReadyAt[0].Equal(t0.Add(7*time.Second)) {
		t.Errorf("node seen: boots %v, NotReady at %v, want 7s after the start", r.BootSeen, r.NotReadyAt)
	}
	clk.SetTime(t0.Add(9 * time.Second))
	o.Observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: "u1", Labels: map[string]string{contract.WorkerActionLabel: contract.ActionLoad}},
		Spec: corev1.PodSpec{NodeName: "n0"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}})
	if p := o.Record().Pods; len(p) != 1 || !p[0].Created.Equal(t0.Add(9*time.Second)) || !p[0].SucceededAt.Equal(t0.Add(9*time.Second)) {
		t.Errorf("pod seen: %+v, want created and succeeded 9s after the start", p)
	}
	var got2 []int64
	for _, e := range o.Trace() {
		got2 = append(got2, e.TMS)
	}
	// Two heartbeats, the Ready change and the boot, the pod's creation,
	// its phase and its load.
	if want := []int64{3000, 5000, 7000, 7000, 9000, 9000, 9000}; !slices.Equal(got2, want) {
		t.Errorf("trace times %v, want %v", got2, want)
	}
}

// A ground truth that cannot be read is an error of the observer,
// reported once per node, not a silently empty truth.
func TestUnreadableGroundTruth(t *testing.T) {
	o := newTest(t, nil)
	if err := o.Err(); err != nil {
		t.Fatalf("no error yet: %v", err)
	}
	bad := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n0", Annotations: map[string]string{observetest.Annotation: "{"}}}
	o.Observe(bad)
	o.Observe(bad)
	err := o.Err()
	var syn *json.SyntaxError
	if err == nil || !errors.As(err, &syn) || !strings.Contains(err.Error(), "node n0: read the ground truth on its Lease") ||
		strings.Count(err.Error(), "node n0") != 1 {
		t.Errorf("Err() = %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{GroundTruth: observetest.Reader{}}, "Config.Nodes"},
		{Config{Nodes: []string{"n0"}}, "Config.GroundTruth"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	o := newTest(t, nil)
	if err := o.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "Config.Clientset") {
		t.Errorf("Start without clients: %v", err)
	}
}

// Gaps returns the gaps that overlap the window: closed ones, and open
// ones (not relisted yet) that began before its end.
func TestGaps(t *testing.T) {
	o := newTest(t, nil)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	o.gaps = []WatchGap{{What: "Pods", From: at(6), To: at(7), Err: "410"}, {What: "Leases", From: at(1), To: at(2), Err: "410"}}
	o.watches = map[string]*watchState{"Nodes": {open: &WatchGap{What: "Nodes", From: at(20), Err: "connection refused"}}}
	var got []string
	for _, g := range o.Gaps(at(5), at(30)) {
		got = append(got, g.What)
	}
	if strings.Join(got, ",") != "Pods,Nodes" {
		t.Errorf("gaps overlapping 5s..30s: %v, want Pods (closed) and Nodes (open)", got)
	}
	if g := o.Gaps(at(8), at(10)); len(g) != 0 {
		t.Errorf("gaps overlapping 8s..10s: %+v", g)
	}
}
