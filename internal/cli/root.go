package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/internal/shutdown"
)

// Exit codes. A CI job can tell them apart: 1 is a verdict about the
// subject; 2 means the command line or an input file must change (nothing
// ran); 3 means no verdict could be given this time (an error verdict, an
// interruption, a fault of the infrastructure), and a rerun may give one;
// 4 means every case was skipped (the nodes or the subject lack what the
// selected scenarios need), so nothing was judged: a job that asked for
// verdicts must not pass on none.
const (
	ExitOK         = 0
	ExitFailed     = 1
	ExitUsage      = 2
	ExitInfra      = 3
	ExitAllSkipped = 4
	programName    = "bootproof"
)

// ForcedCleanupTimeout bounds the cleanup after a second SIGINT or
// SIGTERM, before the process exits.
const ForcedCleanupTimeout = 10 * time.Second

// Main runs the command line with os.Args and the process's streams. The
// first SIGINT or SIGTERM stops the command (a run records the cases in
// flight and those not started as not run, and cleans up); a second one
// forces the exit after at most ForcedCleanupTimeout of cleanup (child
// processes killed, VMs destroyed, temporary keys removed), exit code 3
// (ExitInfra).
// It returns the exit code.
func Main() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go handleSignals(sigs, cancel, os.Stderr, func() { os.Exit(ExitInfra) })
	return Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// handleSignals cancels the command at the first signal and forces the
// exit at the second.
func handleSignals(sigs <-chan os.Signal, cancel context.CancelFunc, w io.Writer, exit func()) {
	s := <-sigs
	fmt.Fprintf(w, "%s: %v: stopping; send it again to force the exit\n", programName, s)
	cancel()
	s = <-sigs
	fmt.Fprintf(w, "%s: %v again: forcing the exit after at most %s of cleanup\n", programName, s, ForcedCleanupTimeout)
	if left := shutdown.Run(ForcedCleanupTimeout); len(left) > 0 {
		fmt.Fprintf(w, "%s: cleanup not finished: %s\n", programName, strings.Join(left, ", "))
	}
	exit()
}

// Streams are where commands write.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// Run executes the command line args and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s := Streams{Out: stdout, Err: stderr}
	root := NewRootCommand(s)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := withFlags(root.ExecuteContext(ctx))
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", programName, err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Errors cobra produced itself: unknown flags, commands, arguments.
	return ExitUsage
}

// NewRootCommand returns the bootproof command tree.
func NewRootCommand(s Streams) *cobra.Command {
	var verbosity int
	root := &cobra.Command{
		Use:   programName,
		Short: "Reboot-conformance harness for Kubernetes kernel-module operators",
		Long: `bootproof proves that after every node reboot - including fast reboots that
finish inside kube-controller-manager's --node-monitor-grace-period, where the
node never shows NotReady - each kernel module is loaded again in the new boot.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			log := funcr.New(func(prefix, args string) {
				if prefix != "" {
					fmt.Fprintf(s.Err, "%s: %s\n", prefix, args)
				} else {
					fmt.Fprintln(s.Err, args)
				}
			}, funcr.Options{Verbosity: verbosity})
			cmd.SetContext(logr.NewContext(cmd.Context(), log))
		},
	}
	root.PersistentFlags().IntVarP(&verbosity, "verbosity", "v", 0, "log verbosity (0 = important events only)")
	root.AddCommand(newControlPlaneCommand(s))
	root.AddCommand(newKMMCommand(s))
	root.AddCommand(newNodesCommand(s))
	root.AddCommand(newRunCommand(s), newCalibrateCommand(s), newMutateCommand(s), newListCommand(s), newReportCommand(s))
	root.AddCommand(newImageCommand(s), newVMCommand(s), newKindCommand(s))
	root.AddCommand(newCleanupCommand(s), newVersionCommand(s))
	return root
}

// runGroup is the RunE of a command that only groups subcommands: without
// arguments it prints help, with any it fails like an unknown command.
func runGroup(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q for %q; run '%s --help' for the commands", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return cmd.Help()
}
