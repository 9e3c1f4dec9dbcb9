package fakes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// NodeReader returns a Node as last seen; an error for which
// apierrors.IsNotFound holds when there is none. What the kubelet's status
// loop reads must be there: the name, status.conditions and
// status.nodeInfo; a reader may leave the rest out.
type NodeReader interface {
	Node(name string) (*corev1.Node, error)
}

// InformerNodeReader is a NodeReader over one Node informer: a fleet's
// kubelets share it as each real kubelet keeps its own Node informer. It
// caches each Node trimmed to what the status loop reads (see
// statusView), so a fleet of thousands holds no labels, taints, images,
// capacity or managedFields it never looks at.
type InformerNodeReader struct {
	factory informers.SharedInformerFactory
	lister  corelisters.NodeLister
}

// NewInformerNodeReader watches every Node through client, which must be
// allowed to list and watch them (FleetRBAC grants it).
func NewInformerNodeReader(client kubernetes.Interface) *InformerNodeReader {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(statusView))
	nodes := f.Core().V1().Nodes()
	nodes.Informer() // registered with the factory, so Start runs it
	return &InformerNodeReader{factory: f, lister: nodes.Lister()}
}

// Node returns the Node named name from the informer's cache.
func (r *InformerNodeReader) Node(name string) (*corev1.Node, error) { return r.lister.Get(name) }

// Start runs the informer until ctx ends and waits for its first list.
func (r *InformerNodeReader) Start(ctx context.Context) error {
	r.factory.Start(ctx.Done())
	for typ, ok := range r.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("node informer: %v cache not synced: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// statusView trims a Node to what a kubelet's status loop reads from
// its node lister: name, uid and resourceVersion (the informer's
// bookkeeping), status.conditions (compared, and kept for their
// transition times) and status.nodeInfo (boot ID and kernel version).
// Anything else passes through unchanged. Trimming a trimmed Node gives
// the same Node, as an informer transform must allow.
func statusView(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Status:     corev1.NodeStatus{Conditions: n.Status.Conditions, NodeInfo: n.Status.NodeInfo},
	}, nil
}

// Shutdown stops the informer and waits for it.
func (r *InformerNodeReader) Shutdown() { r.factory.Shutdown() }
