package fakes

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/api/meta"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodEventHandler receives the pods bound to one node: every add and
// update, and deletes (deleted = true).
type PodEventHandler func(pod *corev1.Pod, deleted bool)

// PodSource delivers pod events to kubelets by node name. A fleet shares
// one; a lone kubelet (the VM agent) has one scoped to its node.
type PodSource interface {
	// Subscribe registers h for pods bound to node and replays the pods
	// already known. The returned function ends the subscription.
	Subscribe(node string, h PodEventHandler) (cancel func())
}

const nodeNameIndex = "spec.nodeName"

// InformerPodSource is a PodSource over one pod informer, indexed by node
// name.
type InformerPodSource struct {
	informer cache.SharedIndexInformer
	factory  informers.SharedInformerFactory

	mu       sync.RWMutex
	handlers map[string]PodEventHandler
}

// NewInformerPodSource watches pods through client. With node set, it
// watches only the pods bound to that node (what a node's own credentials
// may list); with node empty, every pod (a fleet identity that may list
// and watch pods cluster-wide).
func NewInformerPodSource(client kubernetes.Interface, node string) (*InformerPodSource, error) {
	opts := []informers.SharedInformerOption{informers.WithTransform(stripManagedFields)}
	if node != "" {
		opts = append(opts, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
		}))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	inf := f.Core().V1().Pods().Informer()
	s := &InformerPodSource{informer: inf, factory: f, handlers: map[string]PodEventHandler{}}
	if err := inf.AddIndexers(cache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("pod informer index: %w", err)
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.dispatch(obj, false) },
		UpdateFunc: func(_, obj any) { s.dispatch(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			s.dispatch(obj, true)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pod informer handler: %w", err)
	}
	return s, nil
}

func (s *InformerPodSource) dispatch(obj any, deleted bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	s.mu.RLock()
	h := s.handlers[pod.Spec.NodeName]
	s.mu.RUnlock()
	if h != nil {
		h(pod, deleted)
	}
}

// Start runs the informer until ctx ends and waits for its first sync.
func (s *InformerPodSource) Start(ctx context.Context) error {
	s.Run(ctx)
	return s.WaitSynced(ctx)
}

// Run runs the informer until ctx ends, without waiting for its sync.
func (s *InformerPodSource) Run(ctx context.Context) { s.factory.Start(ctx.Done()) }

// WaitSynced waits for the informer's first sync.
func (s *InformerPodSource) WaitSynced(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return fmt.Errorf("pod informer did not sync: %w", ctx.Err())
	}
	return nil
}

// Shutdown waits for the informer's goroutines after ctx ended.
func (s *InformerPodSource) Shutdown() { s.factory.Shutdown() }

// Subscribe implements PodSource.
func (s *InformerPodSource) Subscribe(node string, h PodEventHandler) func() {
	s.mu.Lock()
	s.handlers[node] = h
	s.mu.Unlock()
	objs, _ := s.informer.GetIndexer().ByIndex(nodeNameIndex, node)
	for _, o := range objs {
		h(o.(*corev1.Pod), false)
	}
	return func() {
		s.mu.Lock()
		delete(s.handlers, node)
		s.mu.Unlock()
	}
}

// stripManagedFields drops metadata.managedFields from an object before
// an informer caches it (controller-runtime offers the same transform,
// TransformStripManagedFields, which the VM agent does not link): no
// kubelet reads them, and they are a large part of a Pod, so a fleet of
// thousands would keep them all in memory for nothing.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
