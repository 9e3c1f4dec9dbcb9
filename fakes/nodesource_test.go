package fakes_test

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/bootproof/bootproof/fakes"
)

// TestInformerNodeReader: the shared Node reader serves Nodes from its
// cache without their managedFields (a fleet keeps thousands in memory),
// and NotFound for a Node it has not seen, so the kubelet registers.
func TestInformerNodeReader(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready},
			NodeInfo: corev1.NodeSystemInfo{BootID: "boot-a", KernelVersion: "6.1.0"},
			Images:   []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}}}}
	r := fakes.NewInformerNodeReader(fake.NewClientset(node))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); r.Shutdown() }()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := r.Node("n1")
	if err != nil {
		t.Fatal(err)
	}
	// What the status loop reads is kept, the rest is not cached.
	if got.Name != "n1" || got.Status.NodeInfo != node.Status.NodeInfo || !reflect.DeepEqual(got.Status.Conditions, node.Status.Conditions) {
		t.Errorf("cached Node %s: nodeInfo %+v conditions %+v, want %+v and %+v",
			got.Name, got.Status.NodeInfo, got.Status.Conditions, node.Status.NodeInfo, node.Status.Conditions)
	}
	if len(got.ManagedFields) != 0 || got.Labels != nil || got.Spec.Taints != nil || got.Status.Images != nil {
		t.Errorf("cached Node keeps managedFields %d, labels %v, taints %v, images %v; want none of them",
			len(got.ManagedFields), got.Labels, got.Spec.Taints, got.Status.Images)
	}
	if _, err := r.Node("n2"); !apierrors.IsNotFound(err) {
		t.Errorf("unknown node: err %v, want NotFound", err)
	}
}
