package fakes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// FleetConfig configures a fleet of lightweight kubelets in one process.
type FleetConfig struct {
	// Names of the nodes; or Count nodes named Prefix + index.
	Names  []string
	Count  int
	Prefix string
	// Timing for every kubelet; zero means kubelet-defaults.
	Timing Timing
	// Client watches pods for the whole fleet (one shared informer); it
	// needs get/list/watch on pods cluster-wide (FleetRBAC), and acts for
	// every node when NodeClient is nil.
	Client kubernetes.Interface
	// NodeClient returns the client a node acts with; give each node its
	// own system:node:<name> identity where the cluster allows it.
	NodeClient func(name string) (kubernetes.Interface, error)
	// NewKernel returns a node's kernel; default a SimKernel with the
	// default modules.
	NewKernel func(name string) (Kernel, error)
	// Labels and Taints for every node.
	Labels map[string]string
	Taints []corev1.Taint
	// StartConcurrency bounds concurrent registrations; default 50.
	StartConcurrency int
}

// Fleet runs many kubelets against one API server with one shared pod
// informer indexed by node name and one shared Node informer.
type Fleet struct {
	cfg      FleetConfig
	src      *InformerPodSource
	nodes    *InformerNodeReader
	kubelets []*Kubelet
	byName   map[string]*Kubelet
	started  chan struct{}

	// failed is closed at the first kubelet error (failErr), so
	// WaitRegistered does not wait for a node that will never register.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error
}

// NewFleet builds the kubelets; Start runs them.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	if cfg.Client == nil {
		return nil, errors.New("fleet: no API client")
	}
	names := cfg.Names
	if len(names) == 0 {
		if cfg.Count <= 0 {
			return nil, fmt.Errorf("fleet: node count %d: accepted: at least 1", cfg.Count)
		}
		if cfg.Prefix == "" {
			cfg.Prefix = "bp-node-"
		}
		for i := range cfg.Count {
			names = append(names, fmt.Sprintf("%s%04d", cfg.Prefix, i))
		}
	}
	if cfg.StartConcurrency <= 0 {
		cfg.StartConcurrency = 50
	}
	src, err := NewInformerPodSource(cfg.Client, "")
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, src: src, nodes: NewInformerNodeReader(cfg.Client), byName: map[string]*Kubelet{}, started: make(chan struct{}), failed: make(chan struct{})}
	for i, name := range names {
		if _, dup := f.byName[name]; dup {
			return nil, fmt.Errorf("fleet: node name %s given twice", name)
		}
		client := cfg.Client
		if cfg.NodeClient != nil {
			if client, err = cfg.NodeClient(name); err != nil {
				return nil, fmt.Errorf("fleet: client for node %s: %w", name, err)
			}
		}
		var kern Kernel
		if cfg.NewKernel != nil {
			kern, err = cfg.NewKernel(name)
		} else {
			kern, err = NewSimKernel(SimKernelConfig{})
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: kernel for node %s: %w", name, err)
		}
		k, err := New(Config{NodeName: name, Client: client, Kernel: kern, Timing: cfg.Timing, Pods: src, Nodes: f.nodes,
			Labels: cfg.Labels, Taints: cfg.Taints, Address: fmt.Sprintf("192.0.2.%d", 1+i%250)})
		if err != nil {
			return nil, err
		}
		f.kubelets = append(f.kubelets, k)
		f.byName[name] = k
	}
	return f, nil
}

// Start runs the fleet until ctx ends: the shared informer first, then the
// kubelets (at most StartConcurrency registering at once). It returns the
// first kubelet error, or nil when ctx ends.
func (f *Fleet) Start(ctx context.Context) error {
	if err := f.src.Start(ctx); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer f.src.Shutdown()
	if err := f.nodes.Start(ctx); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer f.nodes.Shutdown()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, f.cfg.StartConcurrency)
	errs := make(chan error, len(f.kubelets))
	stops := make([]func(), len(f.kubelets))
	var wg sync.WaitGroup
	for i, k := range f.kubelets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			go func() {
				select {
				case <-k.Registered():
				case <-ctx.Done():
				}
				<-sem
			}()
			stop, err := k.start(ctx)
			if err != nil {
				f.failOnce.Do(func() { f.failErr = err; close(f.failed) })
				errs <- err
				cancel()
				return
			}
			stops[i] = stop
		}()
	}
	close(f.started)
	// Once started, a kubelet runs on its own goroutines: the fleet keeps
	// none per node while it waits for the end.
	wg.Wait()
	<-ctx.Done()
	for _, stop := range stops {
		if stop != nil {
			wg.Add(1)
			go func() { defer wg.Done(); stop() }()
		}
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// WaitRegistered blocks until every node has registered; it returns a
// kubelet's error (e.g. a *ForeignNodeError) as soon as one failed.
func (f *Fleet) WaitRegistered(ctx context.Context) error {
	for _, k := range f.kubelets {
		select {
		case <-k.Registered():
		case <-f.failed:
			return fmt.Errorf("fleet: %w", f.failErr)
		case <-ctx.Done():
			return fmt.Errorf("fleet: node %s not registered: %w", k.NodeName(), ctx.Err())
		}
	}
	return nil
}

// Kubelet returns the named node's kubelet, or nil.
func (f *Fleet) Kubelet(name string) *Kubelet { return f.byName[name] }

// Kubelets returns every kubelet in name order of creation.
func (f *Fleet) Kubelets() []*Kubelet { return append([]*Kubelet(nil), f.kubelets...) }

// FleetUser is the user name a fleet's shared informer runs as when the
// harness issues it its own identity.
const FleetUser = "bootproof:fleet"

// FleetRoleName names the cluster role and binding of FleetRBAC.
const FleetRoleName = "bootproof:fleet-reader"

// FleetRBAC returns the one rule a fleet needs beyond its nodes' own
// identities: get/list/watch on pods and nodes cluster-wide for the
// shared informers (a node identity may only see its own node's pods),
// bound to user.
func FleetRBAC(user string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: FleetRoleName},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: FleetRoleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	return role, binding
}
