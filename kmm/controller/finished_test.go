package controller

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/worker"
)

// staleList serves pod lists from a snapshot, as an informer cache that
// has not yet seen a deletion does; everything else goes to the API.
type staleList struct {
	client.Client
	pods []corev1.Pod
}

func (s *staleList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if pl, ok := list.(*corev1.PodList); ok {
		pl.Items = append([]corev1.Pod(nil), s.pods...)
		return nil
	}
	return s.Client.List(ctx, list, opts...)
}

// TestFinishedPodOnStaleCache: a reconcile that records a finished loader
// pod deletes it and emits one Event; later reconciles on a cache that
// still lists the deleted pod make no write and emit nothing, and the
// reconciler forgets the pod once the cache no longer lists it.
func TestFinishedPodOnStaleCache(t *testing.T) {
	scheme := testScheme(t)
	item := kmmv1beta1.ModuleItem{Name: "dummy", Namespace: "ns"}
	cfg := kmmv1beta1.ModuleConfig{KernelVersion: "6.1", ContainerImage: "example.invalid/dummy:1"}
	nmc := &kmmv1beta1.NodeModulesConfig{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "nmc-uid"},
		Spec: kmmv1beta1.NodeModulesConfigSpec{Modules: []kmmv1beta1.NodeModuleSpec{{ModuleItem: item, Config: cfg}}}}
	pod, err := worker.Pod(worker.Owner{Name: "n", UID: nmc.UID}, item, cfg, worker.ActionLoad)
	if err != nil {
		t.Fatal(err)
	}
	pod.UID = "pod-uid"
	msg, _ := json.Marshal(worker.Result{BootID: "A", Action: worker.ActionLoad, Modules: []string{"dummy"}})
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: worker.ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: string(msg)}}}}}

	var writes atomic.Int32
	count := func() { writes.Add(1) }
	api := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(baseNode(), nmc, pod).WithStatusSubresource(nmc, pod).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
				count()
				return c.Create(ctx, o, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
				count()
				return c.Delete(ctx, o, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				count()
				return c.Patch(ctx, o, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				count()
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			},
		}).Build()
	// The cache's snapshot: the finished pod as it was before the delete.
	cached := &corev1.Pod{}
	if err := api.Get(context.Background(), types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, cached); err != nil {
		t.Fatal(err)
	}
	stale := &staleList{Client: api, pods: []corev1.Pod{*cached}}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: stale, APIReader: api, Detector: detect.BootIDDetector{}, BootSource: BootFromWorker, Recorder: rec,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "n"}}

	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("first reconcile: %v", err)
	}
	got := &kmmv1beta1.NodeModulesConfig{}
	if err := api.Get(context.Background(), types.NamespacedName{Name: "n"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Modules) != 1 || got.Status.Modules[0].BootID != "A" {
		t.Fatalf("status after the first reconcile = %+v, want dummy loaded in boot A", got.Status.Modules)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("first reconcile emitted %d events, want 1", n)
	}
	<-rec.Events
	first := writes.Load()
	if first == 0 {
		t.Fatal("first reconcile wrote nothing")
	}

	for i := range 2 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("reconcile %d on the stale cache: %v", i+2, err)
		}
	}
	if n := writes.Load() - first; n != 0 {
		t.Errorf("reconciles on a cache still listing the deleted pod made %d writes, want 0", n)
	}
	if n := len(rec.Events); n != 0 {
		t.Errorf("reconciles on a cache still listing the deleted pod emitted %d events (%s), want 0", n, <-rec.Events)
	}

	stale.pods = nil // the cache caught up
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("reconcile after the cache caught up: %v", err)
	}
	if _, ok := r.finished.Load("n"); ok {
		t.Error("the reconciler still remembers the deleted pod after the cache stopped listing it")
	}
}
