package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/nodeapi"
)

func newNodesCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Run simulated nodes against a cluster and reboot them by hand",
		RunE:  runGroup,
	}
	cmd.AddCommand(newNodesRunCommand(s), newNodesActCommand(s, "reboot"), newNodesActCommand(s, "restart-kubelet"),
		newNodesActCommand(s, "pause"), newNodesActCommand(s, "resume"), newNodesListCommand(s))
	return cmd
}

type nodesRunOptions struct {
	kubeconfig string
	count      int
	prefix     string
	timing     string
	socket     string
}

func newNodesRunCommand(s Streams) *cobra.Command {
	o := nodesRunOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Keep N simulated nodes alive until SIGINT",
		Long: `Registers N simulated nodes (lightweight kubelets over simulated kernels) with
the cluster of --kubeconfig and keeps them alive until SIGINT or SIGTERM.
Every node is tainted bootproof.dev/simulated (NoSchedule and NoExecute) and
fails any pod bound to it that is not a KMM worker; a Node of the same name
that bootproof did not create is never taken over (exit 2). The nodes act with the kubeconfig's identity, which needs the rights of the
system:nodes group plus get/list/watch on pods. Drive them with
'bootproof nodes reboot|restart-kubelet|pause|resume NAME' through the control
socket.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return nodesRun(cmd.Context(), s, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, then ~/.kube/config)")
	f.IntVar(&o.count, "count", 1, "number of nodes")
	f.StringVar(&o.prefix, "prefix", "bp-node-", "node name prefix; names are PREFIX0000, PREFIX0001, ...")
	f.StringVar(&o.timing, "timing", string(nodeapi.TimingKubeletDefaults), "timing profile: "+nodeapi.JoinTimingProfiles(nodeapi.TimingProfiles()))
	f.StringVar(&o.socket, "control-socket", fakes.DefaultControlSocket(), "unix socket to serve the control API on (default: $XDG_RUNTIME_DIR/bootproof-nodes.sock, else one in a new private directory under $TMPDIR)")
	return cmd
}

func nodesRun(ctx context.Context, s Streams, o nodesRunOptions) error {
	if o.count < 1 {
		return withCode(ExitUsage, fmt.Errorf("invalid --count %d: accepted: at least 1", o.count))
	}
	timing, err := fakes.TimingProfile(nodeapi.TimingProfile(o.timing))
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--timing: %w", err))
	}
	rc, err := loadKubeconfig(o.kubeconfig)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := cluster.ProbeAPIServer(ctx, rc, o.kubeconfig); err != nil {
		return withCode(ExitUsage, err)
	}
	// Heartbeats must never wait behind client-side throttling.
	krc := fakes.KubeletRESTConfig(rc)
	krc.QPS, krc.Burst = float32(50+o.count), 100+2*o.count
	client, err := kubernetes.NewForConfig(krc)
	if err != nil {
		return failure(err)
	}
	run, err := runs.Start(ctx, rc, runs.NewID())
	if err != nil {
		return failure(err)
	}
	// At the end the run's Nodes and Leases go, on a forced exit too.
	defer finishRunOnExit(s.Err, run)()
	fleet, err := fakes.NewFleet(fakes.FleetConfig{Count: o.count, Prefix: o.prefix, Timing: timing, Client: client, Labels: run.Labels()})
	if err != nil {
		return withCode(ExitUsage, err)
	}
	sock, err := fakes.ListenControl(o.socket)
	if err != nil {
		return failure(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- fleet.Start(ctx) }()
	go func() { errs <- sock.Serve(ctx, fleet) }()
	if err := fleet.WaitRegistered(ctx); err != nil {
		cancel()
		// Both goroutines end with ctx: the fleet with the error
		// WaitRegistered returned, the control socket with nil.
		_, _ = <-errs, <-errs
		var foreign *fakes.ForeignNodeError
		if errors.As(err, &foreign) {
			return withCode(ExitUsage, fmt.Errorf("%w; choose another --prefix", err))
		}
		return failure(err)
	}
	fmt.Fprintf(s.Out, "%d simulated nodes ready (%s%04d...); control socket %s; Ctrl-C stops them\n", o.count, o.prefix, 0, sock.Path)
	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
	}
	cancel()
	second := <-errs
	if first == nil {
		first = second
	}
	if first != nil {
		return failure(first)
	}
	fmt.Fprintln(s.Out, "simulated nodes stopped")
	return nil
}

type nodesActOptions struct {
	socket        string
	downtime      time.Duration
	blip          time.Duration
	kernelVersion string
	timeout       time.Duration
}

func newNodesActCommand(s Streams, action string) *cobra.Command {
	o := nodesActOptions{}
	short := map[string]string{
		"reboot":          "Reboot a simulated node: heartbeats stop, modules are gone, a new boot ID after --downtime",
		"restart-kubelet": "Restart a simulated node's kubelet: a heartbeat gap, same boot, modules kept",
		"pause":           "Cut a simulated node off the API (a network blip) until 'resume'",
		"resume":          "End a 'pause'",
	}[action]
	cmd := &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return nodesAct(cmd.Context(), s, action, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.socket, "control-socket", fakes.DefaultControlSocket(), "control socket of 'bootproof nodes run' (default: the one it printed, found under $XDG_RUNTIME_DIR or $TMPDIR)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	if action == "reboot" || action == "restart-kubelet" {
		f.DurationVar(&o.downtime, "downtime", 0, "time from the last heartbeat to the kubelet's start (required)")
		_ = cmd.MarkFlagRequired("downtime")
	}
	if action == "reboot" {
		f.DurationVar(&o.blip, "blip", 0, "post Ready=False for this long at startup before Ready=True")
		f.StringVar(&o.kernelVersion, "kernel-version", "", "boot this kernel version (a kernel upgrade)")
	}
	return cmd
}

func nodesAct(ctx context.Context, s Streams, action, node string, o nodesActOptions) error {
	if o.downtime < 0 {
		return withCode(ExitUsage, fmt.Errorf("invalid --downtime %s: accepted: a duration of 0 or more, e.g. 5s", o.downtime))
	}
	if o.blip < 0 {
		return withCode(ExitUsage, fmt.Errorf("invalid --blip %s: accepted: a duration of 0 or more", o.blip))
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	socket, err := controlSocket(o.socket)
	if err != nil {
		return err
	}
	resp, err := fakes.NewControlClient(socket).Act(ctx, fakes.ControlRequest{Node: node, Action: action,
		Downtime: o.downtime, NotReadyFor: o.blip, KernelVersion: o.kernelVersion})
	if err != nil {
		return failure(fmt.Errorf("%s %s: %w", action, node, err))
	}
	fmt.Fprintf(s.Out, "%s %s: boot %s -> %s, kernel %s, modules %v\n", action, node,
		resp.Before.BootID, resp.After.BootID, resp.After.KernelVersion, resp.After.Modules)
	return nil
}

func newNodesListCommand(s Streams) *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the nodes of a running 'bootproof nodes run' with boot IDs and loaded modules (JSON)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			socket, err := controlSocket(socket)
			if err != nil {
				return err
			}
			resp, err := fakes.NewControlClient(socket).Nodes(cmd.Context())
			if err != nil {
				return failure(err)
			}
			enc := json.NewEncoder(s.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(resp.Nodes)
		},
	}
	cmd.Flags().StringVar(&socket, "control-socket", fakes.DefaultControlSocket(), "control socket of 'bootproof nodes run' (default: the one it printed, found under $XDG_RUNTIME_DIR or $TMPDIR)")
	return cmd
}

// controlSocket is the socket --control-socket names, or the one of the
// fleet running here.
func controlSocket(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	p, err := fakes.FindControlSocket()
	if err != nil {
		return "", withCode(ExitUsage, err)
	}
	return p, nil
}
