package fakes_test

import (
	"context"
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
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "boot-a"}}}
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
	if got.Status.NodeInfo.BootID != "boot-a" {
		t.Errorf("boot ID %q, want boot-a", got.Status.NodeInfo.BootID)
	}
	if len(got.ManagedFields) != 0 {
		t.Errorf("cached Node keeps %d managedFields entries, want none", len(got.ManagedFields))
	}
	if _, err := r.Node("n2"); !apierrors.IsNotFound(err) {
		t.Errorf("unknown node: err %v, want NotFound", err)
	}
}
