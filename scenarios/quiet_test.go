package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// againSubject is scriptedSubject with a loader pod for each boot it
// loads in, and, with again set, a second loader pod again after each
// load, in the same boot: a reconciler that loads again on its own.
type againSubject struct {
	*scriptedSubject
	again time.Duration
	n     *atomic.Int32
}

func (a againSubject) Start(ctx context.Context, req SubjectRequest) (SubjectInstance, error) {
	in, err := a.scriptedSubject.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	go func() {
		seen := map[string]bool{}
		for i := 0; i < 2000; i++ {
			time.Sleep(5 * time.Millisecond)
			nmcs, err := a.w.dyn.Resource(contract.NMCResource).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, nmc := range nmcs.Items {
				mods, _, _ := unstructuredModules(nmc.Object)
				for _, boot := range mods {
					if seen[nmc.GetName()+boot] {
						continue
					}
					seen[nmc.GetName()+boot] = true
					a.pod(req, nmc.GetName(), boot)
					if a.again > 0 {
						node, boot := nmc.GetName(), boot
						time.AfterFunc(a.again, func() { a.pod(req, node, boot) })
					}
				}
			}
		}
	}()
	return in, nil
}

// pod writes a Succeeded loader pod of dummy on node that reports boot.
func (a againSubject) pod(req SubjectRequest, node, boot string) {
	i := a.n.Add(1)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("loader-%d", i), Namespace: req.Namespace, UID: types.UID(fmt.Sprint(i)),
		Labels:      map[string]string{contract.WorkerActionLabel: "Load", contract.CaseLabel: req.Selector[contract.CaseLabel]},
		Annotations: map[string]string{contract.WorkerConfigAnnotation: "modprobe:\n  moduleName: dummy\n"}},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "worker",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: `{"bootID":"` + boot + `","action":"Load"}`}}}}}}
	_, _ = a.w.cs.CoreV1().Pods(req.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
}

// unstructuredModules lists the boots of an NMC's status entries.
func unstructuredModules(obj map[string]any) ([]string, bool, error) {
	status, _ := obj["status"].(map[string]any)
	mods, _ := status["modules"].([]any)
	var boots []string
	for _, m := range mods {
		if e, ok := m.(map[string]any); ok {
			if b, _ := e["bootId"].(string); b != "" {
				boots = append(boots, b)
			}
		}
	}
	return boots, len(boots) > 0, nil
}

// TestQuietWindowSeesLoadingAgain: a subject that loads once per boot
// passes a fast reboot; one that loads again a second after each load,
// in the same boot, is caught by no-extra-work in the same short
// scenario, whose timeline ends as soon as the reload is seen: the final
// check watches a quiet window (at least QuietAtLeast) before it counts.
func TestQuietWindowSeesLoadingAgain(t *testing.T) {
	t.Parallel()
	pass := Expectation{Outcome: Pass, Source: "test"}
	for _, tc := range []struct {
		name        string
		again       time.Duration
		wantVerdict string
	}{
		{"loads once per boot", 0, Pass},
		{"loads again a second later", time.Second, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(0)
			subj := againSubject{scriptedSubject: &scriptedSubject{w: w, firstLoad: 200 * time.Millisecond, reloadAfter: 200 * time.Millisecond},
				again: tc.again, n: &atomic.Int32{}}
			e := &Engine{Cluster: scriptedCluster{}, Backend: scriptedBackend{w}, SettleTimeout: time.Second, clients: w.clients}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := e.Run(ctx, scriptedFastReboot(20*time.Second), expectingSubject{subj, pass})
			if r.Verdict != tc.wantVerdict {
				t.Fatalf("verdict %s (%s), want %s; assertions %s", r.Verdict, r.Message, tc.wantVerdict, outcomes(r))
			}
			if tc.wantVerdict == Fail && !strings.HasPrefix(r.Message, "no-extra-work: ") {
				t.Errorf("failed through %q, want no-extra-work", r.Message)
			}
			if !traceHas(r, "settled: watching") {
				t.Errorf("the trace does not show the quiet window")
			}
		})
	}
}

func traceHas(r CaseResult, text string) bool {
	for _, e := range r.Trace {
		if strings.Contains(e.Detail, text) {
			return true
		}
	}
	return false
}
