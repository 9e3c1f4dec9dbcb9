package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/kindimage"
	"github.com/bootproof/bootproof/internal/runner"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

type runOptions struct {
	cluster       string
	nodes         string
	subjects      []string
	scenarios     []string
	labels        []string
	timing        string
	grace         time.Duration
	monitor       time.Duration
	parallel      int
	nodeBudget    int
	repeat        int
	maxNodes      int
	reloadSLO     time.Duration
	reportDir     string
	kubeconfig    string
	binDir        string
	certValidity  time.Duration
	scenarioFiles []string
	subjectFiles  []string
	kindCluster   string
	kindImage     string
	kindArchives  []string
	retain        bool
	nodeCreds     string
	maxNodesSet   bool
	// changed holds the flags given on the command line.
	changed map[string]bool
	vm      backend.LibvirtConfig
	// verbose shows the logs on stderr too; verbosity is -v.
	verbose   bool
	verbosity int
	// calibrate, set by 'bootproof calibrate', runs the subject files'
	// calibration variants in-process and judges the run as a calibration.
	calibrate *calibrateRun
}

// Defaults of 'bootproof run' on the embedded cluster.
const (
	DefaultRunGrace   = 10 * time.Second
	DefaultRunMonitor = time.Second
	// DefaultVMGrace is the embedded cluster's grace period with VM nodes:
	// a TCG guest boots in about 7s alone but in 20-30s when six boot at
	// once on 2 cores (a 3-node storm, two cases in parallel), and a fast
	// reboot must still stay inside the grace period.
	DefaultVMGrace = 45 * time.Second
	// MaxRepeat bounds --repeat: a hundred runs of the catalog take hours.
	MaxRepeat = 100
	// DefaultNodeBudget caps the nodes of the cases running at once: 6
	// reboot storms of 50 nodes. Measured on 2 cores with 'calibrate
	// --repeat 3' (42 storms in all): with 16 storms at once (800
	// simulated nodes) 14 storm cases renewed Leases late by over the
	// grace period and became invalid runs; with 8 (400), 2, as they
	// started together.
	DefaultNodeBudget = 300
	// DefaultVMMaxNodes caps scenarios' node counts on VMs (each is a
	// TCG guest of 512 MiB and a busy core while it boots).
	DefaultVMMaxNodes = 3
)

func newRunCommand(s Streams) *cobra.Command {
	o := runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run reboot scenarios against a subject and write reports",
		Long: `Runs the scenario catalog (or the scenarios selected) against each subject on
a cluster with simulated or VM nodes, judges every case from kernel ground
truth and writes results.json, junit.xml, trace.json, index.html and
summary.md. Exit code 0: every verdict passed (or was skipped); 1: a verdict
failed; 2: a usage error (bad flags or input; nothing ran); 3: no verdict
could be given: an error verdict (invalid run, infrastructure or subject
fault), an interrupted run, or an infrastructure fault outside the cases.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseZero(cmd, "grace-period", "monitor-period", "cert-validity"); err != nil {
				return err
			}
			o.maxNodesSet = cmd.Flags().Changed("max-nodes")
			o.changed = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.changed[f.Name] = true })
			o.verbosity, _ = cmd.InheritedFlags().GetInt("verbosity")
			return runRun(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", string(clusterEmbedded), "cluster: embedded (started here), kind, or kubeconfig (an existing cluster)")
	f.StringVar(&o.nodes, "nodes", string(nodesFake), "node backend: fake (simulated nodes) or libvirt (VMs)")
	f.StringArrayVar(&o.subjects, "subject", nil, "subject: bootid, legacy or external; give it more than once to run several (default bootid and legacy, unless --subject-file is given)")
	f.StringArrayVar(&o.subjectFiles, "subject-file", nil, "run the subject (an operator) this YAML file describes; more than once for several; combinable with --subject")
	f.StringArrayVar(&o.scenarios, "scenario", nil, "scenario name or glob (default: the whole catalog); more than once for several")
	f.StringArrayVar(&o.scenarioFiles, "scenario-file", nil, "run a scenario from this YAML file as well (strictly decoded)")
	f.StringArrayVar(&o.labels, "label", nil, "run only scenarios with this label (more than once: all of them)")
	f.StringVar(&o.timing, "timing", "", "override every scenario's kubelet timing: fast or kubelet-defaults")
	f.DurationVar(&o.grace, "grace-period", 0, fmt.Sprintf("node-monitor-grace-period: set on the embedded cluster (default %s, %s with --nodes libvirt), required with --cluster kubeconfig", DefaultRunGrace, DefaultVMGrace))
	f.DurationVar(&o.monitor, "monitor-period", DefaultRunMonitor, "node-monitor-period of the embedded cluster")
	f.IntVar(&o.parallel, "parallel", 2, "cases run at once")
	f.IntVar(&o.nodeBudget, "max-parallel-nodes", DefaultNodeBudget, "nodes of the cases run at once, at most (0: no cap): a case that does not fit waits while smaller ones start; one bigger than the cap runs alone")
	f.IntVar(&o.repeat, "repeat", 1, fmt.Sprintf("run every scenario x subject this many times (at most %d), each a case of its own: the matrix counts what each pair observed (\"fail 3 of 5\"), telling a failure that comes every time from one that comes by chance", MaxRepeat))
	f.IntVar(&o.maxNodes, "max-nodes", 0, fmt.Sprintf("cap every scenario's node count (0: no cap; with --nodes libvirt the default is %d)", DefaultVMMaxNodes))
	f.DurationVar(&o.reloadSLO, "reload-slo", 0, "every subject's reload service level, e.g. 10s: a reload later than this after the node's new boot showed (and the subject could act) fails reload-slo; one not there by the scenario's deadline fails reload (0: each scenario's rule, 10 x the slowest load measured, at least 15s; a subject file's reloadSLO wins for its subject)")
	f.StringVar(&o.reportDir, "report-dir", "", "report directory: new or empty (default a new "+DefaultReportRoot+"/<timestamp>-<random>, with "+DefaultReportRoot+"/latest pointing to it)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for --cluster kubeconfig (default $KUBECONFIG)")
	f.StringVar(&o.binDir, "bin-dir", "", binDirHelp)
	f.DurationVar(&o.certValidity, "cert-validity", controlplane.DefaultCertValidity, "how long the embedded cluster's certificates are valid (it stops working after that)")
	f.StringVar(&o.kindCluster, "kind-cluster", "", "with --cluster kind: reuse this existing kind cluster instead of creating one")
	f.StringVar(&o.kindImage, "kind-image", cluster.DefaultKindImage, "with --cluster kind: the node image (kind's published one, or one 'make kind-image' built here)")
	f.StringSliceVar(&o.kindArchives, "kind-load-image-archive", nil, "with --cluster kind: image archives to load into the cluster's nodes (e.g. from 'bootproof kind build-operator-image'); repeatable")
	f.BoolVar(&o.retain, "retain", false, "with --cluster kind: keep the cluster bootproof created")
	addVMFlags(f, &o.vm)
	f.BoolVar(&o.verbose, "verbose", false, "show the logs (klog, controller-runtime, client-go, bootproof's parts) on stderr too; without it they go only to "+RunLogFile+" in the report directory")
	f.StringVar(&o.nodeCreds, "node-credentials", "shared", "with --cluster kubeconfig: shared (simulated nodes act with the kubeconfig's identity) or csr (each node gets system:node:<name> through an approved CertificateSigningRequest)")
	return cmd
}

// runRun is 'bootproof run': validate the flags (nothing starts before
// they are all accepted), start the cluster, the subjects and the node
// backend, run the cases and write the reports.
func runRun(ctx context.Context, s Streams, o runOptions) error {
	p, err := o.validate(s.Err)
	if err != nil {
		return err
	}
	rc := &runContext{s: s, o: o, plan: p}
	defer rc.close()
	return rc.run(ctx)
}

// runPlan is what validated flags resolve to.
type runPlan struct {
	scenarios    []*scenarios.Scenario
	subjectFiles []*subject.File
	// grace is the grace period to start a cluster with.
	grace time.Duration
}

// validate checks every flag and completes the defaults that depend on
// others; errors are usage errors naming the flag. The input files'
// warnings go to stderr.
func (o *runOptions) validate(stderr io.Writer) (runPlan, error) {
	var p runPlan
	var err error
	warn := newFileWarnings(stderr)
	if p.scenarios, err = selectScenarios(o.scenarios, o.labels, o.scenarioFiles, warn); err != nil {
		return p, err
	}
	if p.subjectFiles, err = readSubjectFiles(o.subjectFiles, warn); err != nil {
		return p, err
	}
	if o.calibrate != nil {
		if p.subjectFiles, err = o.calibrate.selectFiles(p.subjectFiles); err != nil {
			return p, err
		}
		if err := o.calibrate.checkSelection(p.subjectFiles, p.scenarios, o.scenarios); err != nil {
			return p, err
		}
	}
	if o.timing != "" {
		timing := nodeapi.TimingProfile(o.timing)
		if !timing.Valid() {
			return p, withCode(ExitUsage, fmt.Errorf("invalid --timing %q: accepted: %s", o.timing, nodeapi.JoinTimingProfiles(nodeapi.TimingProfiles())))
		}
		for i, sc := range p.scenarios {
			c := *sc
			c.Timing = timing
			p.scenarios[i] = &c
		}
	}
	if len(o.subjects) == 0 && len(p.subjectFiles) == 0 {
		o.subjects = []string{subject.BootID, subject.Legacy}
	}
	for _, name := range o.subjects {
		if !slices.Contains(subject.Names, name) {
			return p, withCode(ExitUsage, fmt.Errorf("invalid --subject %q: accepted: %s", name, strings.Join(subject.Names, ", ")))
		}
	}
	if o.parallel < 1 {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --parallel %d: accepted: 1 or more", o.parallel))
	}
	if o.nodeBudget < 0 {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --max-parallel-nodes %d: accepted: 0 (no cap) or more", o.nodeBudget))
	}
	if o.repeat < 1 || o.repeat > MaxRepeat {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --repeat %d: accepted: 1 to %d", o.repeat, MaxRepeat))
	}
	if o.maxNodes < 0 {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --max-nodes %d: accepted: 0 (no cap) or more", o.maxNodes))
	}
	if o.reloadSLO < 0 || o.reloadSLO > subject.MaxReloadSLO {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --reload-slo %s: accepted: 0 (each scenario's rule) or a duration up to %s, e.g. 10s", o.reloadSLO, subject.MaxReloadSLO))
	}
	if err := o.checkClusterFlags(); err != nil {
		return p, err
	}
	if err := checkReportDir(o.reportDir); err != nil {
		return p, err
	}
	nodes, err := nodesOf(o.nodes)
	if err != nil {
		return p, err
	}
	if nodes.validate != nil {
		if err := nodes.validate(o); err != nil {
			return p, err
		}
	}
	p.grace = cmp.Or(o.grace, nodes.grace)
	return p, nil
}

// runContext holds what a run started, to stop it in reverse order.
type runContext struct {
	s    Streams
	o    runOptions
	plan runPlan
	// cleanups run in reverse order by close.
	cleanups []func()
	// failed is read by the kind cluster's cleanup (logs kept on failure).
	failed bool
	// log is the run log's path, once it is open.
	log string
}

func (rc *runContext) defer_(f func()) { rc.cleanups = append(rc.cleanups, f) }

func (rc *runContext) close() {
	for i := len(rc.cleanups) - 1; i >= 0; i-- {
		rc.cleanups[i]()
	}
}

func (rc *runContext) run(ctx context.Context) error {
	rc.failed = true
	sweepTempDirs(rc.s)
	ctx, rl := openRunLog(ctx, rc.o.verbose, rc.o.verbosity, rc.s.Err)
	rc.defer_(rl.close)
	if err := rc.operatorImage(); err != nil {
		return err
	}
	cl, err := rc.startCluster(ctx)
	if err != nil {
		return err
	}
	run, err := rc.startRun(ctx, cl)
	if err != nil {
		return err
	}
	subject.InitLogging(ctx)
	var subjects []scenarios.Subject
	for _, name := range rc.o.subjects {
		subj, err := subject.New(name, cl)
		if err != nil {
			return withCode(ExitUsage, err)
		}
		subjects = append(subjects, subj)
	}
	dir, err := reportDir(rc.o.reportDir)
	if err != nil {
		return err
	}
	if err := rl.attach(dir); err != nil {
		return err
	}
	rc.log = rl.path
	fmt.Fprintf(rc.s.Err, "logs (klog, controller-runtime, client-go; --verbose shows them here): %s\n", rl.path)
	// Every run log opens with the run it belongs to (a log of a run on a
	// quiet cluster would otherwise be empty).
	logr.FromContextOrDiscard(ctx).Info("run started", "run", run.ID, "cluster", cl.Name(), "reportDir", dir)
	for _, f := range rc.plan.subjectFiles {
		if rc.o.calibrate == nil {
			subjects = append(subjects, subject.FromFile(f, cl, filepath.Join(dir, "subjects"), run.ID))
			continue
		}
		var subj scenarios.Subject
		if rc.o.calibrate.deployments {
			subj, err = subject.InDeployment(f, cl, kindimage.DefaultOperatorRef, filepath.Join(dir, "subjects"), run.ID)
		} else {
			subj, err = subject.InProcess(f, cl)
		}
		if err != nil {
			return withCode(ExitUsage, err)
		}
		subjects = append(subjects, subj)
	}
	env := map[string]string{"cluster": cl.Name(), "nodes": rc.o.nodes, "grace-period": cl.GracePeriod().String()}
	nodes, err := rc.startNodes(ctx, cl, dir, env)
	if err != nil {
		return err
	}
	prog := newProgress(rc.s.Out, !rc.o.verbose)
	start := time.Now()
	prog.start()
	res := runner.Run(ctx, runner.Config{Cluster: cl, Backend: nodes, Subjects: subjects,
		Scenarios: rc.plan.scenarios, Parallel: rc.o.parallel, Repeat: rc.o.repeat, MaxNodes: rc.o.maxNodes, ReloadSLO: rc.o.reloadSLO, NodeBudget: rc.o.nodeBudget, Progress: prog, RunID: run.ID,
		Include: rc.o.calibrate.include(rc.plan.subjectFiles)})
	prog.stop()
	if er, ok := cl.(environmentReporter); ok {
		maps.Copy(env, er.Environment(ctx))
	}
	res.Environment = env
	return rc.report(ctx, dir, res, start)
}

// environmentReporter is the optional capability of a cluster that
// describes itself for the report at the end of a run (kind: its image,
// creation time and node memory).
type environmentReporter interface {
	Environment(ctx context.Context) map[string]string
}

// startCluster starts or connects to the cluster --cluster names (its
// provider, run_cluster_*.go). On every cluster simulated nodes carry
// contract.SimulatedTaints, which keep the cluster's own pods (kind's,
// say) off them.
func (rc *runContext) startCluster(ctx context.Context) (scenarios.Cluster, error) {
	p, err := clusterOf(rc.o.cluster)
	if err != nil {
		return nil, err
	}
	return p.start(ctx, rc)
}

// startNodes returns the node backend --nodes names (its provider,
// run_nodes_*.go).
func (rc *runContext) startNodes(ctx context.Context, cl scenarios.Cluster, dir string, env map[string]string) (scenarios.Backend, error) {
	p, err := nodesOf(rc.o.nodes)
	if err != nil {
		return nil, err
	}
	return p.start(ctx, rc, cl, dir, env)
}

// report writes the reports, prints the summary and returns the exit
// code's error: interrupted or an error verdict (ExitInfra), a failed
// verdict (ExitFailed), every case skipped (ExitAllSkipped).
func (rc *runContext) report(ctx context.Context, dir string, res scenarios.Results, start time.Time) error {
	s := rc.s
	var cal *reports.CalibrationResult
	if rc.o.calibrate != nil {
		c, err := rc.calibration(res)
		if err != nil {
			return err
		}
		cal = &c
		if err := reports.WriteCalibration(dir, res, c, time.Now()); err != nil {
			return failure(fmt.Errorf("reports: %w", err))
		}
	} else if err := reports.Write(dir, res, time.Now()); err != nil {
		return failure(fmt.Errorf("reports: %w", err))
	}
	if rc.o.reportDir == "" {
		latest := filepath.Join(filepath.Dir(dir), "latest")
		_ = os.Remove(latest)
		_ = os.Symlink(filepath.Base(dir), latest)
	}
	printSummary(s.Out, res, cal)
	n := reports.Count(res)
	rc.failed = n.Fail+n.Error > 0
	if cal != nil {
		rc.failed = !cal.OK()
		fmt.Fprintf(s.Out, "%d case(s) in %s\n", len(res.Cases), reports.FormatDuration(time.Since(start)))
	} else {
		fmt.Fprintf(s.Out, "%d passed, %d failed, %d errors, %d skipped in %s\nreport: %s\n", n.Pass, n.Fail, n.Error, n.Skipped,
			reports.FormatDuration(time.Since(start)), filepath.Join(dir, reports.HTMLFile))
	}
	if rc.log != "" {
		fmt.Fprintf(s.Out, "logs: %s\n", rc.log)
	}
	if cal != nil {
		return rc.calibrationExit(ctx, dir, *cal)
	}
	switch {
	case ctx.Err() != nil:
		return failure(fmt.Errorf("interrupted: %w", ctx.Err()))
	case n.Error > 0:
		return failure(fmt.Errorf("%d case(s) could not be judged (invalid run or infrastructure fault); see %s", n.Error, filepath.Join(dir, reports.SummaryFile)))
	case n.Fail > 0:
		return withCode(ExitFailed, fmt.Errorf("%d case(s) failed; see %s", n.Fail, filepath.Join(dir, reports.SummaryFile)))
	case n.Pass == 0 && n.Skipped > 0:
		return withCode(ExitAllSkipped, fmt.Errorf("no verdict: all %d case(s) were skipped (the nodes or the subject lack what the scenarios need; each case's reason is in %s)", n.Skipped, filepath.Join(dir, reports.SummaryFile)))
	case n.Pass == 0:
		return withCode(ExitAllSkipped, errors.New("no verdict: no case ran"))
	}
	return nil
}

func newListCommand(s Streams) *cobra.Command {
	var scenarioFiles, subjectFiles []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scenario catalog: name, labels, nodes, expectations, description",
		Long: `Lists the scenarios of the catalog and of --scenario-file files, with what
each subject is expected to get: the built-in subjects' expectations from the
scenarios, and those of the subjects --subject-file files describe.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			all, err := scenarios.Catalog()
			if err != nil {
				return failure(err)
			}
			warn := newFileWarnings(s.Err)
			fromFiles, err := readScenarioFiles(scenarioFiles, all, warn)
			if err != nil {
				return err
			}
			files, err := readSubjectFiles(subjectFiles, warn)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tLABELS\tNODES\tEXPECT\tDESCRIPTION")
			for _, sc := range append(all, fromFiles...) {
				var exp []string
				for _, subj := range subject.Names {
					if v, ok := sc.Expect[subj]; ok {
						exp = append(exp, subj+"="+v.String())
					}
				}
				for _, f := range files {
					v, _ := f.Expectation(sc)
					exp = append(exp, f.Name+"="+v.String())
				}
				desc := strings.Join(strings.Fields(sc.Description), " ")
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", sc.Name, strings.Join(sc.Labels, ","), sc.Nodes, strings.Join(exp, " "), desc)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringArrayVar(&scenarioFiles, "scenario-file", nil, "list the scenario in this YAML file too")
	cmd.Flags().StringArrayVar(&subjectFiles, "subject-file", nil, "show what the subject this YAML file describes is expected to get")
	return cmd
}

// addVMFlags registers the flags of the libvirt VM backend.
func addVMFlags(f *pflag.FlagSet, c *backend.LibvirtConfig) {
	const p = "with --nodes libvirt: "
	f.StringVar(&c.URI, "libvirt-uri", "", p+"the libvirt connection (default qemu:///system)")
	f.StringVar(&c.Accel, "accel", backend.AccelAuto, p+"accelerator auto (KVM where a probe boot succeeds, else TCG), kvm or tcg")
	addImageFlags(f, c, p)
}

// addImageFlags registers the guest image flags ('run --nodes libvirt'
// and 'image build'); prefix starts every help text.
func addImageFlags(f *pflag.FlagSet, c *backend.LibvirtConfig, prefix string) {
	f.StringVar(&c.Agent, "agent", "", prefix+"the static bootproof-agent binary (default: bootproof-agent next to this executable)")
	f.StringVar(&c.KernelDir, "kernel-dir", "", prefix+"an unpacked kernel tree (boot/vmlinuz-<version>, lib/modules/<version> with modules.dep); default: download --kernel-package")
	f.StringVar(&c.KernelPackage, "kernel-package", "", prefix+"the Debian/Ubuntu kernel package to download into the cache (default: linux-image-amd64 on Debian, linux-image-generic on Ubuntu)")
	f.StringVar(&c.CacheDir, "cache-dir", ".cache", prefix+"where kernels and built images are cached")
}
