package kmm

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/controller"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/kmm/worker"
)

// NewScheme returns a scheme with the Kubernetes built-in types and
// kmm.sigs.x-k8s.io/v1beta1.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add built-in types to scheme: %w", err)
	}
	if err := kmmv1beta1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add %s to scheme: %w", kmmv1beta1.GroupVersion, err)
	}
	return s, nil
}

// NewManager returns a controller-runtime manager running the
// NodeModulesConfig reconciler with o (defaulted and validated). Its
// clients talk to the API server through cfg with o's QPS and Burst. Start it
// with its Start method; Run does both.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	o = o.Default()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	det, err := detect.ByName(o.Detector)
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	// Cache only worker pods, and only in the worker namespaces.
	hasAction, err := labels.NewRequirement(worker.ActionLabel, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("worker pod selector: %w", err)
	}
	podCache := cache.ByObject{Label: labels.NewSelector().Add(*hasAction)}
	if len(o.WorkerNamespaces) > 0 {
		podCache.Namespaces = map[string]cache.Config{}
		for _, ns := range o.WorkerNamespaces {
			podCache.Namespaces[ns] = cache.Config{}
		}
	}
	byObject := map[client.Object]cache.ByObject{&corev1.Pod{}: podCache}
	if len(o.Selector) > 0 {
		sel := labels.SelectorFromSet(o.Selector)
		byObject[&corev1.Node{}] = cache.ByObject{Label: sel}
		byObject[&kmmv1beta1.NodeModulesConfig{}] = cache.ByObject{Label: sel}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = o.QPS, o.Burst, nil
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        o.Logger,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionReleaseOnCancel: !o.KeepLeaderLease,
		Cache:                         cache.Options{ByObject: byObject},
		// Tests and the harness run several managers in one process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if o.HealthProbeBindAddress != "" && o.HealthProbeBindAddress != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, fmt.Errorf("add health check: %w", err)
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, fmt.Errorf("add ready check: %w", err)
		}
	}
	r := &controller.Reconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Detector:   det,
		BootSource: controller.BootSource(o.RecordBootFrom),
		Recorder:   mgr.GetEventRecorder("bootproof-kmm"),
		Clock:      o.Clock,

		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		OnPanic:                 o.OnPanic,
		Variant:                 variant.Name(o.Variant),
	}
	if o.LeaderElection {
		r.LeaderLease = types.NamespacedName{Namespace: o.LeaderElectionNamespace, Name: o.LeaderElectionID}
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("set up reconciler: %w", err)
	}
	o.Logger.Info("reconciler configured", "detector", o.Detector, "recordBootFrom", o.RecordBootFrom,
		"workerNamespaces", o.WorkerNamespaces, "leaderElection", o.LeaderElection, "variant", o.Variant)
	return mgr, nil
}

// NewManagers returns one manager per replica (Options.Replicas), each
// a reconciler of its own: its logger names its replica when there are
// several, and only the first serves metrics and health probes (one
// address cannot be bound twice).
func NewManagers(ctx context.Context, cfg *rest.Config, o Options) ([]ctrl.Manager, error) {
	o = o.Default()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	mgrs := make([]ctrl.Manager, o.Replicas)
	for i := range mgrs {
		oi := o
		if o.Replicas > 1 {
			oi.Logger = o.Logger.WithValues("replica", i)
		}
		if i > 0 {
			oi.MetricsBindAddress, oi.HealthProbeBindAddress = "0", "0"
		}
		mgr, err := NewManager(ctx, cfg, oi)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		mgrs[i] = mgr
	}
	return mgrs, nil
}

// StartAll runs the managers until ctx ends, then returns nil; when one
// stops on its own first (an error, its leadership lost), it stops the
// others and returns what stopped it, naming its replica where there
// are several.
func StartAll(ctx context.Context, mgrs []ctrl.Manager) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type end struct {
		i   int
		err error
	}
	ends := make(chan end, len(mgrs))
	for i, m := range mgrs {
		go func() { ends <- end{i, m.Start(ctx)} }()
	}
	var first error
	for range mgrs {
		e := <-ends
		if first == nil && ctx.Err() == nil {
			first = e.err
			if first == nil {
				first = errors.New("stopped without an error")
			}
			if len(mgrs) > 1 {
				first = fmt.Errorf("replica %d: %w", e.i, first)
			}
		}
		cancel()
	}
	return first
}

// Run runs the reconciler's replicas until ctx ends; it returns nil
// then, or the error that stopped one of them.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgrs, err := NewManagers(ctx, cfg, o)
	if err != nil {
		return err
	}
	if err := StartAll(ctx, mgrs); err != nil {
		return fmt.Errorf("run nodemodulesconfig reconciler: %w", err)
	}
	return nil
}
