package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

func baseNode() *corev1.Node {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}, ResourceVersion: "1"},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: t0, LastTransitionTime: t0},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: t0, LastTransitionTime: t0},
			},
			NodeInfo:    corev1.NodeSystemInfo{BootID: "A", KernelVersion: "6.1"},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		},
	}
}

func TestNodeChanged(t *testing.T) {
	later := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))
	tests := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"heartbeat only", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = later
			}
		}, false},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1") }, false},
		{"other condition flips", func(n *corev1.Node) {
			n.Status.Conditions[1].Status = corev1.ConditionTrue
			n.Status.Conditions[1].LastTransitionTime = later
		}, false},
		{"annotation", func(n *corev1.Node) { n.Annotations = map[string]string{"x": "y"} }, false},
		{"boot ID", func(n *corev1.Node) { n.Status.NodeInfo.BootID = "B" }, true},
		{"kernel version", func(n *corev1.Node) { n.Status.NodeInfo.KernelVersion = "6.2" }, true},
		{"Ready status", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }, true},
		{"Ready transition time", func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = later }, true},
		{"Ready condition gone", func(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[1:] }, true},
		{"label", func(n *corev1.Node) { n.Labels["b"] = "2" }, true},
		{"taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"cordon", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := baseNode()
			n := old.DeepCopy()
			tc.change(n)
			if got := NodeChanged(old, n); got != tc.want {
				t.Errorf("NodeChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSchedulable(t *testing.T) {
	noSched := corev1.Taint{Key: "maint", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		taints      []corev1.Taint
		cordoned    bool
		tolerations []corev1.Toleration
		want        bool
	}{
		{"no taints", nil, false, nil, true},
		{"PreferNoSchedule only", []corev1.Taint{{Key: "p", Effect: corev1.TaintEffectPreferNoSchedule}}, false, nil, true},
		{"NoSchedule", []corev1.Taint{noSched}, false, nil, false},
		{"NoExecute", []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}, false, nil, false},
		{"NoSchedule tolerated", []corev1.Taint{noSched}, false,
			[]corev1.Toleration{{Key: "maint", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, true},
		{"other toleration", []corev1.Taint{noSched}, false,
			[]corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}, false},
		{"cordoned", nil, true, nil, false},
		{"cordoned, tolerated", nil, true,
			[]corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := baseNode()
			n.Spec.Taints = tc.taints
			n.Spec.Unschedulable = tc.cordoned
			if got, why := schedulable(n, tc.tolerations); got != tc.want {
				t.Errorf("schedulable = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestSameConfig(t *testing.T) {
	a := kmmv1beta1.ModuleConfig{KernelVersion: "6.1", ContainerImage: "i", Modprobe: kmmv1beta1.ModprobeSpec{ModuleName: "m"}}
	b := a
	b.InTreeModulesToRemove = []string{}
	b.Modprobe.Parameters = []string{}
	if !sameConfig(a, b) {
		t.Error("empty and missing lists differ")
	}
	b.Modprobe.Parameters = []string{"x=1"}
	if sameConfig(a, b) {
		t.Error("different parameters are the same")
	}
}

func TestStatusHelpers(t *testing.T) {
	nmc := &kmmv1beta1.NodeModulesConfig{}
	setStatus(nmc, kmmv1beta1.NodeModuleStatus{ModuleItem: kmmv1beta1.ModuleItem{Name: "a", Namespace: "ns"}, BootID: "1"})
	setStatus(nmc, kmmv1beta1.NodeModuleStatus{ModuleItem: kmmv1beta1.ModuleItem{Name: "b", Namespace: "ns"}, BootID: "1"})
	setStatus(nmc, kmmv1beta1.NodeModuleStatus{ModuleItem: kmmv1beta1.ModuleItem{Name: "a", Namespace: "ns"}, BootID: "2"})
	if len(nmc.Status.Modules) != 2 || findStatus(nmc, "ns", "a").BootID != "2" {
		t.Fatalf("after setStatus: %+v", nmc.Status.Modules)
	}
	if findStatus(nmc, "other", "a") != nil {
		t.Error("found a module in another namespace")
	}
	removeStatus(nmc, "ns", "a")
	removeStatus(nmc, "ns", "b")
	if nmc.Status.Modules != nil {
		t.Errorf("after removing all: %+v, want nil", nmc.Status.Modules)
	}
}

func baseWorkerPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kmm-worker-n-m", Namespace: "ns", ResourceVersion: "1", Generation: 1,
			Labels:          map[string]string{worker.ActionLabel: string(worker.ActionLoad)},
			Annotations:     map[string]string{worker.HashAnnotation: "h1"},
			Finalizers:      []string{worker.Finalizer},
			OwnerReferences: []metav1.OwnerReference{{Kind: "NodeModulesConfig", Name: "n", UID: "u1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func TestWorkerPodChanged(t *testing.T) {
	now := metav1.Now()
	running := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: worker.ContainerName, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	}
	tests := []struct {
		name        string
		from, to    func(*corev1.Pod)
		wantChanged bool
	}{
		{"pending to running", nil, running, false},
		{"conditions only", running, func(p *corev1.Pod) {
			running(p)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, false},
		{"own finalizer removed", nil, func(p *corev1.Pod) { p.Finalizers = nil }, false},
		{"succeeded", running, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		{"failed", running, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, true},
		{"failed to succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		{"deletion started", nil, func(p *corev1.Pod) { p.DeletionTimestamp = &now }, true},
		{"container restarted", running, func(p *corev1.Pod) {
			running(p)
			p.Status.ContainerStatuses[0].RestartCount = 1
		}, true},
		{"template hash", nil, func(p *corev1.Pod) { p.Annotations[worker.HashAnnotation] = "h2" }, true},
		{"label", nil, func(p *corev1.Pod) { p.Labels["x"] = "y" }, true},
		{"owner", nil, func(p *corev1.Pod) { p.OwnerReferences[0].UID = "u2" }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := baseWorkerPod()
			if tc.from != nil {
				tc.from(old)
			}
			n := old.DeepCopy()
			n.ResourceVersion = "2"
			tc.to(n)
			if got := WorkerPodChanged(old, n); got != tc.wantChanged {
				t.Errorf("WorkerPodChanged = %v, want %v", got, tc.wantChanged)
			}
			if got := WorkerPodPredicate().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n}); got != tc.wantChanged {
				t.Errorf("WorkerPodPredicate().Update = %v, want %v", got, tc.wantChanged)
			}
		})
	}
}

func TestNMCChanged(t *testing.T) {
	now := metav1.Now()
	base := func() *kmmv1beta1.NodeModulesConfig {
		return &kmmv1beta1.NodeModulesConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1", Generation: 1, Labels: map[string]string{"a": "1"}},
			Spec: kmmv1beta1.NodeModulesConfigSpec{Modules: []kmmv1beta1.NodeModuleSpec{{
				ModuleItem: kmmv1beta1.ModuleItem{Namespace: "ns", Name: "m"}}}},
		}
	}
	tests := []struct {
		name        string
		change      func(*kmmv1beta1.NodeModulesConfig)
		wantChanged bool
	}{
		{"status only", func(c *kmmv1beta1.NodeModulesConfig) {
			c.Status.Modules = []kmmv1beta1.NodeModuleStatus{{ModuleItem: kmmv1beta1.ModuleItem{Namespace: "ns", Name: "m"}, BootID: "B"}}
		}, false},
		{"spec", func(c *kmmv1beta1.NodeModulesConfig) {
			c.Generation = 2
			c.Spec.Modules = nil
		}, true},
		{"spec without a generation (a cache that lacks it)", func(c *kmmv1beta1.NodeModulesConfig) { c.Spec.Modules = nil }, true},
		{"label", func(c *kmmv1beta1.NodeModulesConfig) { c.Labels["a"] = "2" }, true},
		{"deletion", func(c *kmmv1beta1.NodeModulesConfig) { c.DeletionTimestamp = &now }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := base()
			n := old.DeepCopy()
			n.ResourceVersion = "2"
			tc.change(n)
			if got := NMCChanged(old, n); got != tc.wantChanged {
				t.Errorf("NMCChanged = %v, want %v", got, tc.wantChanged)
			}
			if got := NMCPredicate().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n}); got != tc.wantChanged {
				t.Errorf("NMCPredicate().Update = %v, want %v", got, tc.wantChanged)
			}
		})
	}
}

// TestNodeHandlerPriority: a node that booted again is reconciled before
// the nodes queued for anything else.
func TestNodeHandlerPriority(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := NodeHandler()
	ctx := context.Background()
	other := baseNode()
	other.Name = "other"
	h.Create(ctx, event.CreateEvent{Object: other}, q)
	labelled := baseNode()
	labelled.Name = "labelled"
	relabelled := labelled.DeepCopy()
	relabelled.ResourceVersion, relabelled.Labels["b"] = "2", "2"
	h.Update(ctx, event.UpdateEvent{ObjectOld: labelled, ObjectNew: relabelled}, q)
	rebooted := baseNode()
	newBoot := rebooted.DeepCopy()
	newBoot.ResourceVersion, newBoot.Status.NodeInfo.BootID = "2", "B"
	h.Update(ctx, event.UpdateEvent{ObjectOld: rebooted, ObjectNew: newBoot}, q)

	item, prio, _ := q.GetWithPriority()
	if item.Name != "n" || prio != RebootPriority {
		t.Fatalf("first item = %s at priority %d, want n at %d", item.Name, prio, RebootPriority)
	}
	q.Done(item)
	for range 2 {
		item, prio, _ := q.GetWithPriority()
		if prio != 0 {
			t.Errorf("item %s at priority %d, want 0", item.Name, prio)
		}
		q.Done(item)
	}
}

func TestBootChanged(t *testing.T) {
	tests := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"boot ID", func(n *corev1.Node) { n.Status.NodeInfo.BootID = "B" }, true},
		{"kernel version", func(n *corev1.Node) { n.Status.NodeInfo.KernelVersion = "6.2" }, true},
		{"Ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"label", func(n *corev1.Node) { n.Labels["b"] = "2" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := baseNode()
			n := old.DeepCopy()
			tc.change(n)
			if got := BootChanged(old, n); got != tc.want {
				t.Errorf("BootChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReadNMC: the cache serves the NMC unless it may be behind the
// reconciler's own status write (or lacks the NMC); the API server
// serves it then, until the cache shows the newest state.
func TestReadNMC(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kmmv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	nmc := func(bootID string) *kmmv1beta1.NodeModulesConfig {
		return &kmmv1beta1.NodeModulesConfig{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Status: kmmv1beta1.NodeModulesConfigStatus{Modules: []kmmv1beta1.NodeModuleStatus{{BootID: bootID}}}}
	}
	tests := []struct {
		name    string
		inCache bool
		// seen: "" none, "cache" the cache's resourceVersion, "api" the API's.
		seen     string
		wantBoot string
		wantSeen string
	}{
		{"nothing written: the cache", true, "", "cached", ""},
		{"cache shows the write: the cache", true, "cache", "cached", ""},
		{"cache behind the write: the API", true, "api", "api", "api"},
		{"not in the cache: the API", false, "", "api", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nmc("api")).Build()
			cacheB := fake.NewClientBuilder().WithScheme(scheme)
			if tc.inCache {
				cached := nmc("cached")
				cached.ResourceVersion = "1"
				cacheB = cacheB.WithObjects(cached)
			}
			cache := cacheB.Build()
			apiObj := &kmmv1beta1.NodeModulesConfig{}
			if err := api.Get(context.Background(), types.NamespacedName{Name: "n"}, apiObj); err != nil {
				t.Fatal(err)
			}
			cacheRV := ""
			if tc.inCache {
				got := &kmmv1beta1.NodeModulesConfig{}
				if err := cache.Get(context.Background(), types.NamespacedName{Name: "n"}, got); err != nil {
					t.Fatal(err)
				}
				cacheRV = got.ResourceVersion
			}
			if cacheRV == apiObj.ResourceVersion {
				// Tell the two apart.
				apiObj.Status.Modules[0].BootID = "api"
				if err := api.Update(context.Background(), apiObj); err != nil {
					t.Fatal(err)
				}
			}
			rvs := map[string]string{"cache": cacheRV, "api": apiObj.ResourceVersion}
			r := &Reconciler{Client: cache, APIReader: api}
			if tc.seen != "" {
				r.seen.Store("n", rvs[tc.seen])
			}
			got, err := r.readNMC(context.Background(), "n")
			if err != nil {
				t.Fatal(err)
			}
			if b := got.Status.Modules[0].BootID; b != tc.wantBoot {
				t.Errorf("read the NMC from %s, want %s", b, tc.wantBoot)
			}
			seen, pending := r.seen.Load("n")
			switch {
			case tc.wantSeen == "" && pending:
				t.Errorf("still waiting for resourceVersion %v", seen)
			case tc.wantSeen != "" && seen != rvs[tc.wantSeen]:
				t.Errorf("waiting for resourceVersion %v, want %s", seen, rvs[tc.wantSeen])
			}
		})
	}
}
