package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// brokenSubject loads like scriptedSubject until the first reboot, then
// never again; after the reboot it leaves a worker pod that never ends
// (an unloader for the old kernel, say: upstream KMM's #911), and, with
// faultAfter set, reports a fault of its own that long after its start.
type brokenSubject struct {
	*scriptedSubject
	faultAfter time.Duration
	// own: the fault is the subject's own doing (OwnFault).
	own bool
}

func (b brokenSubject) Start(ctx context.Context, req SubjectRequest) (SubjectInstance, error) {
	in, err := b.scriptedSubject.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			nodes, err := b.w.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if err != nil || len(nodes.Items) == 0 || strings.HasSuffix(nodes.Items[0].Status.NodeInfo.BootID, "-boot-0") {
				continue
			}
			n := nodes.Items[0].Name
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kmm-worker-" + n + "-dummy", Namespace: req.Namespace,
				Labels:      map[string]string{contract.WorkerActionLabel: "Unload", contract.CaseLabel: req.Selector[contract.CaseLabel]},
				Annotations: map[string]string{contract.WorkerConfigAnnotation: "modprobe:\n  moduleName: dummy\n"}},
				Spec: corev1.PodSpec{NodeName: n}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			_, _ = b.w.cs.CoreV1().Pods(req.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
			return
		}
	}()
	return &faulting{SubjectInstance: in, at: time.Now().Add(b.faultAfter), on: b.faultAfter > 0, own: b.own}, nil
}

// faulting reports a fault of the subject's own from at on.
type faulting struct {
	SubjectInstance
	at  time.Time
	on  bool
	own bool
	n   atomic.Int32
}

func (f *faulting) Err() error {
	if f.on && time.Now().After(f.at) {
		f.n.Add(1)
		if f.own {
			return fmt.Errorf("manager: %w", ownStop{})
		}
		return errors.New("its process ended on its own (signal: killed)")
	}
	return nil
}

// ownStop is a stop of the subject's own doing.
type ownStop struct{}

func (ownStop) Error() string  { return "its process ended on its own (exit status 2)" }
func (ownStop) OwnFault() bool { return true }

// expectingSubject is a subject with an expectation of its own.
type expectingSubject struct {
	Subject
	exp Expectation
}

func (e expectingSubject) Expectation(*Scenario) (Expectation, bool) { return e.exp, true }

func (w *world) clients() (kubernetes.Interface, dynamic.Interface, error) { return w.cs, w.dyn, nil }

// TestSubjectFaultsAfterAFailureAreFailures: once a judged assertion has
// failed, the verdict is fail through it, whatever happens later in the
// case: a worker pod of the subject that never ends fails workers-finish
// (an invalid run, an error, before), and a fault of the subject found
// after the failure becomes a note. A stop of the subject's own doing
// before any failure fails subject-runs; any other fault before any
// failure is still an error.
func TestSubjectFaultsAfterAFailureAreFailures(t *testing.T) {
	t.Parallel()
	pass := Expectation{Outcome: Pass, Source: "test"}
	s := scriptedFastReboot(3 * time.Second)
	for _, tc := range []struct {
		name        string
		faultAfter  time.Duration
		own         bool
		wantVerdict string
		wantMsg     string
		wantFailed  []string
		wantNote    string
	}{
		{"reload fails, worker never ends", 0, false, Fail, "reload: ", []string{AssertReload, AssertWorkersFinish}, ""},
		{"reload fails, then the subject faults", 4500 * time.Millisecond, false, Fail, "reload: ", []string{AssertReload}, "after an assertion failed"},
		{"reload fails, then the subject stops on its own", 4500 * time.Millisecond, true, Fail, "reload: ", []string{AssertReload}, "after an assertion failed"},
		{"the subject is stopped from outside before any failure", time.Millisecond, false, Error, "subject fault: ", nil, ""},
		{"the subject stops on its own before any failure", time.Millisecond, true, Fail, "subject-runs: at 0.", []string{AssertSubjectRuns}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(0)
			subj := brokenSubject{scriptedSubject: &scriptedSubject{w: w, firstLoad: 200 * time.Millisecond, reloadAfter: time.Hour}, faultAfter: tc.faultAfter, own: tc.own}
			e := &Engine{Cluster: scriptedCluster{}, Backend: scriptedBackend{w}, SettleTimeout: time.Second, clients: w.clients}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := e.Run(ctx, s, expectingSubject{subj, pass})
			if r.Verdict != tc.wantVerdict || !strings.HasPrefix(r.Message, tc.wantMsg) {
				t.Fatalf("verdict %s (%s); want %s starting %q; assertions %s", r.Verdict, r.Message, tc.wantVerdict, tc.wantMsg, outcomes(r))
			}
			for _, name := range tc.wantFailed {
				if a := find(r.Assertions, name); a.OK {
					t.Errorf("%s held (%s), want it failed", name, a.Message)
				}
			}
			if tc.wantNote != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tc.wantNote) {
				t.Errorf("notes %q lack %q", r.Notes, tc.wantNote)
			}
		})
	}
}
