package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
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
