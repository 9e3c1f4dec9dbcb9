package controller

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/kmm/worker"
)

// TestStatusOnCreate: the reconcile that creates a loader pod writes no
// status entry, but for the status-on-create variant, which claims the
// module loaded in the node's boot before the pod ran.
func TestStatusOnCreate(t *testing.T) {
	scheme := testScheme(t)
	for _, tc := range []struct {
		variant   variant.Name
		wantClaim bool
	}{
		{variant.None, false},
		{variant.StatusOnCreate, true},
		{variant.TwoWorkers, false},
	} {
		t.Run(string(tc.variant), func(t *testing.T) {
			item := kmmv1beta1.ModuleItem{Name: "dummy", Namespace: "ns"}
			cfg := kmmv1beta1.ModuleConfig{KernelVersion: "6.1", ContainerImage: "example.invalid/dummy:1"}
			nmc := &kmmv1beta1.NodeModulesConfig{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "nmc-uid"},
				Spec: kmmv1beta1.NodeModulesConfigSpec{Modules: []kmmv1beta1.NodeModuleSpec{{ModuleItem: item, Config: cfg}}}}
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(baseNode(), nmc).WithStatusSubresource(nmc).
				WithIndex(&corev1.Pod{}, PodNodeNameIndex, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
			r := &Reconciler{Client: api, APIReader: api, Detector: detect.BootIDDetector{}, BootSource: BootFromWorker, Variant: tc.variant,
				Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "n"}}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			pods := &corev1.PodList{}
			if err := api.List(context.Background(), pods, client.HasLabels{worker.ActionLabel}); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 1 || worker.ActionOf(&pods.Items[0]) != worker.ActionLoad {
				t.Fatalf("worker pods after the reconcile: %d, want one loader pod", len(pods.Items))
			}
			got := &kmmv1beta1.NodeModulesConfig{}
			if err := api.Get(context.Background(), types.NamespacedName{Name: "n"}, got); err != nil {
				t.Fatal(err)
			}
			claimed := len(got.Status.Modules) == 1 && got.Status.Modules[0].BootID == "A" && got.Status.Modules[0].Name == "dummy"
			if claimed != tc.wantClaim || (!tc.wantClaim && len(got.Status.Modules) != 0) {
				t.Errorf("status with the loader pod not yet run = %+v, want a claim of boot A: %v", got.Status.Modules, tc.wantClaim)
			}
		})
	}
}

// testScheme knows the core types and bootproof's KMM API.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kmmv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// TestStaleBootCache: stale-boot-cache shows a node in the boot it read
// until its entry is staleBootFor old and asks to be requeued when the
// entry expires; the correct reconciler always sees the node's own boot.
func TestStaleBootCache(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	node := func(boot string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		n.Status.NodeInfo.BootID = boot
		return n
	}
	// step: at, the node's boot -> the boot shown, the requeue.
	type step struct {
		at          time.Duration
		boot, shown string
		requeue     time.Duration
	}
	for _, tc := range []struct {
		variant variant.Name
		steps   []step
	}{
		{variant.StaleBootCache, []step{{0, "a", "a", 0}, {4 * time.Second, "b", "a", 21 * time.Second}, {24 * time.Second, "b", "a", time.Second},
			{25 * time.Second, "b", "b", 0}, {26 * time.Second, "c", "b", 24 * time.Second}}},
		{variant.None, []step{{0, "a", "a", 0}, {4 * time.Second, "b", "b", 0}}},
	} {
		clk := clocktesting.NewFakePassiveClock(t0)
		r := &Reconciler{Variant: tc.variant, Clock: clk}
		for _, s := range tc.steps {
			clk.SetTime(t0.Add(s.at))
			n := node(s.boot)
			requeue := r.variantStaleBoot(n)
			if got := n.Status.NodeInfo.BootID; got != s.shown || requeue != s.requeue {
				t.Errorf("%q at %s in boot %s: shown %s, requeue %s; want %s, %s", tc.variant, s.at, s.boot, got, requeue, s.shown, s.requeue)
			}
			if res := r.variantRequeue(reconcile.Result{}, requeue); res.RequeueAfter != s.requeue {
				t.Errorf("%q at %s: requeue after %s, want %s", tc.variant, s.at, res.RequeueAfter, s.requeue)
			}
		}
	}
}

// TestSlowAfterRestart: slow-after-restart holds its reconciles back for
// 10 s after its first reconcile when its leader Lease had another holder
// before it (a start that is not the first), and not on its first start.
func TestSlowAfterRestart(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lease := func(transitions int32) client.Object {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lock"}, Spec: coordinationv1.LeaseSpec{LeaseTransitions: &transitions}}
	}
	ref := types.NamespacedName{Namespace: "ns", Name: "lock"}
	for _, tc := range []struct {
		name      string
		lease     client.Object
		variant   variant.Name
		held      bool
		restarted bool
	}{
		{"first start: no transition", lease(0), variant.SlowAfterRestart, false, false},
		{"a restart: the Lease changed hands", lease(1), variant.SlowAfterRestart, true, true},
		{"the correct reconciler", lease(1), variant.None, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.lease).Build()
			r := &Reconciler{Variant: tc.variant, Client: c, APIReader: c, LeaderLease: ref}
			r.vs.startedAt = time.Now().Add(-time.Minute) // long set up: the delay counts from the first reconcile
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := r.variantWait(ctx)
			if held := err != nil; held != tc.held {
				t.Errorf("variantWait = %v, want held %v", err, tc.held)
			}
			if r.vs.restarted != tc.restarted {
				t.Errorf("restarted %v, want %v", r.vs.restarted, tc.restarted)
			}
		})
	}
}
