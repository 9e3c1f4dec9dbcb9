package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/kmm/variant"
)

func variantSummary(name string) string {
	v, _ := variant.Lookup(variant.Name(name))
	return v.Summary
}

type kmmOptions struct {
	o          kmm.Options
	kubeconfig string
	install    bool
}

func newKMMCommand(s Streams) *cobra.Command {
	ko := kmmOptions{}
	cmd := &cobra.Command{
		Use:   "kmm",
		Short: "Run the NodeModulesConfig reconciler (the subject) until SIGINT or SIGTERM",
		Long: `Runs bootproof's NodeModulesConfig reconciler against a cluster: it loads
the kernel modules of each node's NodeModulesConfig through worker pods and
loads them again after every reboot. --detector bootid (the default) detects
reboots by the node's boot ID; --detector legacy by the Ready condition's
transition time, which misses fast reboots on purpose (the negative control).

The cluster needs the NodeModulesConfig CRD and the reconciler's RBAC
(--install applies both, with the kubeconfig's identity); without --install
it checks that the CRD is served and stops with an error if not. Leader
election is on by default (--leader-elect=false turns it off).

As a subject of 'bootproof run --subject-file' (examples/subjects/), it reads
the KUBECONFIG bootproof gives it and stops on SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKMM(cmd, s, ko)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ko.o.Detector, "detector", kmm.DefaultDetector, "reboot detection: bootid or legacy (the negative control that misses fast reboots)")
	f.StringVar(&ko.o.RecordBootFrom, "record-boot-from", kmm.DefaultRecordBootFrom, "boot recorded for a finished load: worker (the worker's termination message, else the node's boot ID) or node (the node's boot ID at sync time: a known bug, kept as a control)")
	f.StringVar(&ko.o.Variant, "variant", "none", "calibration variant: one seeded defect or slowness ("+strings.Join(variant.Names(), ", ")+"); none is the correct reconciler")
	f.StringToStringVar(&ko.o.Selector, "selector", nil, "reconcile only the NodeModulesConfigs and Nodes with these labels (key=value, separated by commas; default: all)")
	f.StringSliceVar(&ko.o.WorkerNamespaces, "worker-namespace", nil, "namespaces worker pods run in (the modules' namespaces); repeat or separate with commas (default: all namespaces)")
	f.BoolVar(&ko.o.LeaderElection, "leader-elect", true, "use leader election, so that only one instance reconciles")
	f.StringVar(&ko.o.LeaderElectionNamespace, "leader-election-namespace", kmm.DefaultLeaderElectionNamespace, "namespace of the leader-election Lease")
	f.StringVar(&ko.o.LeaderElectionID, "leader-election-id", kmm.DefaultLeaderElectionID, "name of the leader-election Lease")
	f.BoolVar(&ko.o.KeepLeaderLease, "leader-elect-keep-lease", false, "keep the leader-election Lease on exit (controller-runtime's default): a new instance waits for it to expire; by default it is given up")
	f.IntVar(&ko.o.Replicas, "replicas", 1, fmt.Sprintf("instances of the reconciler run in this process, each with a manager and a leader-election identity of its own, as a Deployment's replicas (1 to %d; more than 1 needs leader election)", kmm.MaxReplicas))
	f.StringVar(&ko.o.MetricsBindAddress, "metrics-bind-address", kmm.DefaultMetricsBindAddress, "address of the metrics endpoint; 0 turns it off")
	f.IntVar(&ko.o.MaxConcurrentReconciles, "max-concurrent-reconciles", kmm.DefaultMaxConcurrentReconciles, "nodes reconciled at once")
	f.Float32Var(&ko.o.QPS, "kube-api-qps", kmm.DefaultQPS, "API requests per second (per resource) the reconciler makes at most; negative: no limit")
	f.IntVar(&ko.o.Burst, "kube-api-burst", kmm.DefaultBurst, "API requests the reconciler may make at once above --kube-api-qps")
	f.StringVar(&ko.o.HealthProbeBindAddress, "health-probe-bind-address", "0", "address of /healthz and /readyz; 0 turns them off")
	f.StringVar(&ko.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster config)")
	f.BoolVar(&ko.install, "install", false, "apply the NodeModulesConfig CRD and the RBAC manifest before starting")
	return cmd
}

func runKMM(cmd *cobra.Command, s Streams, ko kmmOptions) error {
	ctx := cmd.Context()
	o := ko.o.Default()
	if err := o.Validate(); err != nil {
		return withCode(ExitUsage, err)
	}
	cfg, err := loadKubeconfig(ko.kubeconfig)
	if err != nil {
		return failure(err)
	}
	log := logr.FromContextOrDiscard(ctx).WithName("kmm")
	ctrllog.SetLogger(log)
	o.Logger = log
	if ko.install {
		if err := kmm.Install(ctx, cfg, kmm.InstallOptions{WorkerNamespaces: o.WorkerNamespaces, LeaderElectionNamespace: o.LeaderElectionNamespace}); err != nil {
			return failure(err)
		}
		fmt.Fprintln(s.Out, "installed the NodeModulesConfig CRD and the reconciler's RBAC")
	} else if err := kmm.CheckCRD(cfg); err != nil {
		var missing *kmm.CRDMissingError
		if errors.As(err, &missing) {
			return withCode(ExitUsage, fmt.Errorf("%w; or give --install", err))
		}
		return failure(err)
	}
	if o.Variant != "" {
		fmt.Fprintf(s.Out, "calibration variant %s: %s\n", o.Variant, variantSummary(o.Variant))
	}
	fmt.Fprintf(s.Out, "kmm reconciler starting: detector %s, boot recorded from %s, leader election %v, %d replica(s); Ctrl-C stops it\n",
		o.Detector, o.RecordBootFrom, o.LeaderElection, o.Replicas)
	if err := kmm.Run(ctx, cfg, o); err != nil {
		return failure(err)
	}
	fmt.Fprintln(s.Out, "kmm reconciler stopped")
	return nil
}

// loadKubeconfig reads path, or without one the default kubeconfig
// locations and then the in-cluster config.
func loadKubeconfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if path != "" {
			return nil, withCode(ExitUsage, fmt.Errorf("--kubeconfig %s: %w", path, err))
		}
		return nil, withCode(ExitUsage, fmt.Errorf("no cluster configuration (give --kubeconfig, set $KUBECONFIG or run in a pod): %w", err))
	}
	return cfg, nil
}
