package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bootproof/bootproof/harness/backend"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/runner"
	"github.com/bootproof/bootproof/harness/subject"
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
	maxNodes      int
	reportDir     string
	kubeconfig    string
	binDir        string
	certValidity  time.Duration
	scenarioFiles []string
	subjectFiles  []string
	kindCluster   string
	kindImage     string
	retain        bool
	nodeCreds     string
	maxNodesSet   bool
	vm            backend.LibvirtConfig
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
			return runRun(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", "embedded", "cluster: embedded (started here), kind, or kubeconfig (an existing cluster)")
	f.StringVar(&o.nodes, "nodes", "fake", "node backend: fake (simulated nodes) or libvirt (VMs)")
	f.StringArrayVar(&o.subjects, "subject", nil, "subject: bootid, legacy or external; give it more than once to run several (default bootid and legacy, unless --subject-file is given)")
	f.StringArrayVar(&o.subjectFiles, "subject-file", nil, "run the subject (an operator) this YAML file describes; more than once for several; combinable with --subject")
	f.StringArrayVar(&o.scenarios, "scenario", nil, "scenario name or glob (default: the whole catalog); more than once for several")
	f.StringArrayVar(&o.scenarioFiles, "scenario-file", nil, "run a scenario from this YAML file as well (strictly decoded)")
	f.StringArrayVar(&o.labels, "label", nil, "run only scenarios with this label (more than once: all of them)")
	f.StringVar(&o.timing, "timing", "", "override every scenario's kubelet timing: fast or kubelet-defaults")
	f.DurationVar(&o.grace, "grace-period", 0, fmt.Sprintf("node-monitor-grace-period: set on the embedded cluster (default %s, %s with --nodes libvirt), required with --cluster kubeconfig", DefaultRunGrace, DefaultVMGrace))
	f.DurationVar(&o.monitor, "monitor-period", DefaultRunMonitor, "node-monitor-period of the embedded cluster")
	f.IntVar(&o.parallel, "parallel", 2, "cases run at once")
	f.IntVar(&o.maxNodes, "max-nodes", 0, fmt.Sprintf("cap every scenario's node count (0: no cap; with --nodes libvirt the default is %d)", DefaultVMMaxNodes))
	f.StringVar(&o.reportDir, "report-dir", "", "report directory: new or empty (default a new reports/<timestamp>-<random>, with reports/latest pointing to it)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for --cluster kubeconfig (default $KUBECONFIG)")
	f.StringVar(&o.binDir, "bin-dir", "", "control-plane binaries for the embedded cluster (default as for 'controlplane up')")
	f.DurationVar(&o.certValidity, "cert-validity", controlplane.DefaultCertValidity, "how long the embedded cluster's certificates are valid (it stops working after that)")
	f.StringVar(&o.kindCluster, "kind-cluster", "", "with --cluster kind: reuse this existing kind cluster instead of creating one")
	f.StringVar(&o.kindImage, "kind-image", cluster.DefaultKindImage, "with --cluster kind: the node image")
	f.BoolVar(&o.retain, "retain", false, "with --cluster kind: keep the cluster bootproof created")
	addVMFlags(f, &o.vm)
	f.StringVar(&o.nodeCreds, "node-credentials", "shared", "with --cluster kubeconfig: shared (simulated nodes act with the kubeconfig's identity) or csr (each node gets system:node:<name> through an approved CertificateSigningRequest)")
	return cmd
}

// runRun is 'bootproof run': validate the flags (nothing starts before
// they are all accepted), start the cluster, the subjects and the node
// backend, run the cases and write the reports.
func runRun(ctx context.Context, s Streams, o runOptions) error {
	p, err := o.validate()
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
// others; errors are usage errors naming the flag.
func (o *runOptions) validate() (runPlan, error) {
	var p runPlan
	var err error
	if p.scenarios, err = selectScenarios(o.scenarios, o.labels, o.scenarioFiles); err != nil {
		return p, err
	}
	if p.subjectFiles, err = readSubjectFiles(o.subjectFiles); err != nil {
		return p, err
	}
	if o.timing != "" {
		if o.timing != "fast" && o.timing != "kubelet-defaults" {
			return p, withCode(ExitUsage, fmt.Errorf("invalid --timing %q: accepted: fast, kubelet-defaults", o.timing))
		}
		for i, sc := range p.scenarios {
			c := *sc
			c.Timing = o.timing
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
	if !slices.Contains([]string{"embedded", "kind", "kubeconfig"}, o.cluster) {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --cluster %q: accepted: embedded, kind, kubeconfig", o.cluster))
	}
	if o.cluster == "kubeconfig" && o.nodeCreds != "shared" && o.nodeCreds != "csr" {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --node-credentials %q: accepted: shared, csr", o.nodeCreds))
	}
	if err := checkReportDir(o.reportDir); err != nil {
		return p, err
	}
	p.grace = cmp.Or(o.grace, DefaultRunGrace)
	switch o.nodes {
	case "fake":
	case "libvirt":
		if err := o.validateLibvirt(); err != nil {
			return p, err
		}
		p.grace = cmp.Or(o.grace, DefaultVMGrace)
	default:
		return p, withCode(ExitUsage, fmt.Errorf("invalid --nodes %q: accepted: fake, libvirt", o.nodes))
	}
	return p, nil
}

// validateLibvirt checks the VM flags and caps node counts by default.
func (o *runOptions) validateLibvirt() error {
	if err := backend.CheckLibvirtBuild(); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--nodes libvirt: %w", err))
	}
	if err := o.vm.Default(); err != nil {
		return failure(err)
	}
	if err := o.vm.Validate(); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--nodes libvirt: %w", err))
	}
	if !o.maxNodesSet {
		o.maxNodes = DefaultVMMaxNodes
	}
	return nil
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
	for _, f := range rc.plan.subjectFiles {
		subjects = append(subjects, subject.FromFile(f, cl, filepath.Join(dir, "subjects")))
	}
	env := map[string]string{"cluster": cl.Name(), "nodes": rc.o.nodes, "grace-period": cl.GracePeriod().String()}
	nodes, err := rc.startNodes(ctx, cl, dir, env)
	if err != nil {
		return err
	}
	prog := newProgress(rc.s.Out)
	start := time.Now()
	prog.start()
	res := runner.Run(ctx, runner.Config{Cluster: cl, Backend: nodes, Subjects: subjects,
		Scenarios: rc.plan.scenarios, Parallel: rc.o.parallel, MaxNodes: rc.o.maxNodes, Progress: prog, RunID: run.ID})
	prog.stop()
	res.Environment = env
	return rc.report(ctx, dir, res, start)
}

// startCluster starts or connects to the cluster --cluster names. On
// every cluster simulated nodes carry contract.SimulatedTaints, which
// keep the cluster's own pods (kind's, say) off them.
func (rc *runContext) startCluster(ctx context.Context) (scenarios.Cluster, error) {
	o, s := rc.o, rc.s
	switch o.cluster {
	case "embedded":
		fmt.Fprintf(s.Err, "starting the embedded control plane (grace period %s, monitor period %s)\n", rc.plan.grace, o.monitor)
		e, err := cluster.StartEmbedded(ctx, controlplane.Config{GracePeriod: rc.plan.grace, MonitorPeriod: o.monitor, BinDir: o.binDir,
			CertValidity: o.certValidity})
		if err != nil {
			return nil, failure(err)
		}
		rc.defer_(e.Stop)
		return e, nil
	case "kubeconfig":
		k, err := cluster.NewKubeconfig(ctx, o.kubeconfig, o.grace, o.nodeCreds == "csr")
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		fmt.Fprintf(s.Err, "running against an existing cluster (grace period %s)\n", k.GracePeriod())
		return k, nil
	default: // kind, as validated
		if err := cluster.KindPreflight(ctx); err != nil {
			return nil, failure(err)
		}
		name := cmp.Or(o.kindCluster, "bootproof")
		fmt.Fprintf(s.Err, "starting kind cluster %s (grace period %s)\n", name, rc.plan.grace)
		k, err := cluster.StartKind(ctx, cluster.KindConfig{Name: name, Reuse: o.kindCluster != "", Retain: o.retain,
			Image: o.kindImage, GracePeriod: rc.plan.grace, MonitorPeriod: o.monitor, LogDir: o.reportDir})
		if err != nil {
			return nil, failure(err)
		}
		rc.defer_(func() { _ = k.Stop(rc.failed) })
		return k, nil
	}
}

// startNodes returns the node backend --nodes names; VM nodes are
// prepared here (kernel, image, accelerator) and recorded in env.
func (rc *runContext) startNodes(ctx context.Context, cl scenarios.Cluster, dir string, env map[string]string) (nodeapi.NodeBackend, error) {
	if rc.o.nodes != "libvirt" {
		return &backend.Fake{Cluster: cl}, nil
	}
	o, s := &rc.o, rc.s
	o.vm.Dir = filepath.Join(dir, "vm")
	fmt.Fprintf(s.Err, "preparing VM nodes: guest kernel, image, accelerator (%s); serial logs in %s\n", o.vm.Accel, o.vm.Dir)
	vm, err := backend.StartLibvirt(ctx, cl, o.vm)
	if err != nil {
		return nil, failure(fmt.Errorf("--nodes libvirt: %w", err))
	}
	rc.defer_(func() {
		if err := vm.Close(); err != nil {
			fmt.Fprintf(s.Err, "vm cleanup: %v\n", err)
		}
	})
	fmt.Fprintf(s.Err, "VM nodes: kernel %s, accelerator %s, at most %d nodes per scenario\n", vm.KernelVersion, vm.Accel, o.maxNodes)
	env["accelerator"], env["guest-kernel"] = vm.Accel, vm.KernelVersion
	return vm, nil
}

// report writes the reports, prints the summary and returns the exit
// code's error: interrupted or an error verdict (ExitInfra), a failed
// verdict (ExitFailed).
func (rc *runContext) report(ctx context.Context, dir string, res scenarios.Results, start time.Time) error {
	s := rc.s
	if err := reports.Write(dir, res, time.Now()); err != nil {
		return failure(fmt.Errorf("reports: %w", err))
	}
	if rc.o.reportDir == "" {
		latest := filepath.Join(filepath.Dir(dir), "latest")
		_ = os.Remove(latest)
		_ = os.Symlink(filepath.Base(dir), latest)
	}
	printSummary(s.Out, res)
	n := reports.Count(res)
	rc.failed = n.Fail+n.Error > 0
	fmt.Fprintf(s.Out, "%d passed, %d failed, %d errors, %d skipped in %s\nreport: %s\n", n.Pass, n.Fail, n.Error, n.Skipped,
		time.Since(start).Round(time.Second), filepath.Join(dir, reports.HTMLFile))
	switch {
	case ctx.Err() != nil:
		return failure(fmt.Errorf("interrupted: %w", ctx.Err()))
	case n.Error > 0:
		return failure(fmt.Errorf("%d case(s) could not be judged (invalid run or infrastructure fault); see %s", n.Error, filepath.Join(dir, reports.SummaryFile)))
	case n.Fail > 0:
		return withCode(ExitFailed, fmt.Errorf("%d case(s) failed; see %s", n.Fail, filepath.Join(dir, reports.SummaryFile)))
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
			fromFiles, err := readScenarioFiles(scenarioFiles, all)
			if err != nil {
				return err
			}
			files, err := readSubjectFiles(subjectFiles)
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
	f.StringVar(&c.KernelPackage, "kernel-package", "", prefix+"the Debian/Ubuntu kernel package to download into the cache (default linux-image-amd64)")
	f.StringVar(&c.CacheDir, "cache-dir", ".cache", prefix+"where kernels and built images are cached")
}
