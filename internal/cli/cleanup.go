package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/internal/shutdown"
	"github.com/bootproof/bootproof/ownership"
	"github.com/bootproof/bootproof/scenarios"
)

// finishTimeout bounds a run's own cleanup at its end.
const finishTimeout = time.Minute

type cleanupOptions struct {
	kubeconfig string
	dryRun     bool
	localOnly  bool
	libvirtURI string
}

func newCleanupCommand(s Streams) *cobra.Command {
	o := cleanupOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete what dead bootproof runs left on a cluster",
		Long: `Deletes from the cluster of --kubeconfig every object a bootproof run created
(label ` + contract.RunLabel + `=<run ID>: Nodes and their Leases, case
namespaces, NodeModulesConfigs, CSRs, RBAC) whose run is no longer alive, and
the objects bootproof installed for all runs (label ` + runs.SharedLabel + `=true: the
NodeModulesConfig CRD and cluster roles, only where bootproof created them)
when no run is alive. Objects without these labels are never touched.

On this host it also removes what killed runs left outside the cluster: their
temporary directories (the embedded control plane's keys and kubeconfigs, a
subject's kubeconfig, a fleet's control socket: ` + "`bootproof-<kind>-<pid>-*`" + ` in
$TMPDIR), the kind clusters they created (` + "`bootproof-<pid>-<start>`" + `), and
with --libvirt-uri their libvirt domains. These belong to a process, not a
Lease: they are removed once that process is gone.

A run is alive while it renews its Lease ` + runs.LeasePrefix + `<run ID> in namespace
` + runs.LeaseNamespace + ` (every ` + runs.RenewInterval.String() + `); it counts as dead ` + runs.LeaseDuration.String() + ` after its last
renewal, or when it has no Lease. A run deletes its own objects when it ends;
cleanup is for runs that were killed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cleanup(cmd.Context(), s, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, then ~/.kube/config)")
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	f.BoolVar(&o.localOnly, "local-only", false, "only this host's leftovers (temporary directories, kind clusters, libvirt domains); no cluster objects")
	f.StringVar(&o.libvirtURI, "libvirt-uri", "", "also remove the libvirt domains of dead runs on this connection (e.g. qemu:///system)")
	return cmd
}

func cleanup(ctx context.Context, s Streams, o cleanupOptions) error {
	if o.localOnly && o.kubeconfig != "" {
		return withCode(ExitUsage, errors.New("--local-only and --kubeconfig: give one (--local-only touches no cluster)"))
	}
	if err := backend.CheckLibvirtURI(o.libvirtURI); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--libvirt-uri: %w", err))
	}
	verb := "deleted"
	if o.dryRun {
		verb = "would delete"
	}
	errs := []error{cleanupLocal(ctx, s, o, verb)}
	if !o.localOnly {
		rc, err := loadKubeconfig(o.kubeconfig)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("%w (or --local-only for this host's leftovers alone)", err))
		}
		deleted, err := runs.Cleanup(ctx, rc, runs.Options{DryRun: o.dryRun})
		for _, d := range deleted {
			if d.Action != "" {
				fmt.Fprintf(s.Out, "%s\n", d)
				continue
			}
			fmt.Fprintf(s.Out, "%s %s\n", verb, d)
		}
		fmt.Fprintf(s.Out, "%s %d objects\n", verb, len(deleted))
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return failure(err)
	}
	return nil
}

// cleanupLocal removes this host's leftovers of dead processes: temporary
// directories, kind clusters and (with --libvirt-uri) libvirt domains.
func cleanupLocal(ctx context.Context, s Streams, o cleanupOptions, verb string) error {
	var errs []error
	dirs, err := ownership.SweepTempDirs("", o.dryRun)
	errs = append(errs, err)
	for _, d := range dirs {
		fmt.Fprintf(s.Out, "%s directory %s\n", verb, d)
	}
	kinds, err := cluster.SweepKindClusters(ctx, o.dryRun)
	errs = append(errs, err)
	for _, k := range kinds {
		fmt.Fprintf(s.Out, "%s kind cluster %s\n", verb, k)
	}
	summary := fmt.Sprintf("%s %d temporary directories and %d kind clusters", verb, len(dirs), len(kinds))
	if o.libvirtURI != "" {
		doms, err := backend.SweepLibvirt(o.libvirtURI, o.dryRun)
		errs = append(errs, err)
		for _, d := range doms {
			fmt.Fprintf(s.Out, "%s libvirt domain %s\n", verb, d)
		}
		if err == nil {
			summary += fmt.Sprintf(" and %d libvirt domains", len(doms))
		}
	}
	// A line even when nothing was left, so that a quiet run reads as done.
	fmt.Fprintf(s.Out, "%s of dead runs on this host\n", summary)
	return errors.Join(errs...)
}

// startRun gives the run on cl its ID and Lease (package internal/runs),
// labels the CSRs its issuer makes, and registers the run's own cleanup:
// at the end it deletes what it labelled.
func (rc *runContext) startRun(ctx context.Context, cl scenarios.Cluster) (*runs.Run, error) {
	run, err := runs.Start(ctx, cl.RESTConfig(), runs.NewID())
	if err != nil {
		return nil, failure(err)
	}
	if iss, ok := cluster.IssuerOf(cl).(*cluster.CSRIssuer); ok {
		iss.Labels = run.Labels()
	}
	fmt.Fprintf(rc.s.Err, "run %s: its objects carry label %s=%s\n", run.ID, contract.RunLabel, run.ID)
	rc.defer_(finishRunOnExit(rc.s.Err, run))
	return run, nil
}

// finishRunOnExit registers finishRun with the forced-exit cleanups (a
// second signal) and returns it for the ordinary end; it runs once.
func finishRunOnExit(w io.Writer, run *runs.Run) func() {
	finish := sync.OnceFunc(func() { finishRun(w, run) })
	unregister := shutdown.Register("cluster objects of run "+run.ID, finish)
	return func() {
		unregister()
		finish()
	}
}

// finishRun deletes what run labelled, and says so.
func finishRun(w io.Writer, run *runs.Run) {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	deleted, err := run.Finish(ctx)
	if len(deleted) > 0 {
		fmt.Fprintf(w, "run %s: deleted %d objects it left\n", run.ID, len(deleted))
	}
	if err != nil {
		fmt.Fprintf(w, "run %s: cleanup: %v ('bootproof cleanup' deletes the rest once the run's lease expired)\n", run.ID, err)
	}
}
