package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/internal/runner"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// envFaults runs the suite ('make test-faults' sets it).
	envFaults = "BOOTPROOF_FAULTS"
	// envRunCLI makes the test binary the bootproof command, for the
	// subject processes and the SIGINT tests.
	envRunCLI = "BOOTPROOF_TEST_RUN_CLI"
	// envDir is where the fault table goes (default _output/faults).
	envDir = "BOOTPROOF_FAULTS_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRunCLI) == "1" {
		os.Exit(cli.Main())
	}
	code := m.Run()
	if err := writeTable(); err != nil {
		fmt.Fprintln(os.Stderr, "fault table:", err)
		code = 1
	}
	os.Exit(code)
}

// row is one fault x subject of the table.
type row struct {
	Fault    string `json:"fault"`
	Subject  string `json:"subject"`
	Verdict  string `json:"verdict"`
	Observed string `json:"observed"`
	// OK: an error or a not-run verdict naming what the fault broke.
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

var table struct {
	mu   sync.Mutex
	rows []row
}

func writeTable() error {
	table.mu.Lock()
	defer table.mu.Unlock()
	if len(table.rows) == 0 {
		return nil
	}
	dir := os.Getenv(envDir)
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "_output", "faults")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(table.rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "faults.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Fault injection: fault x subject -> verdict\n\nEvery fault is injected into a running case (on the embedded cluster; on kind for the kind rows, from make e2e-kind); the verdict must be an error (or not run), never a pass or a fail.\n\n| fault | subject | verdict | observed | as required | message |\n|---|---|---|---|---|---|\n")
	for _, r := range table.rows {
		msg := strings.ReplaceAll(strings.ReplaceAll(r.Message, "|", "\\|"), "\n", " ")
		if len(msg) > 240 {
			msg = msg[:240] + "…"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %v | %s |\n", r.Fault, r.Subject, r.Verdict, r.Observed, r.OK, msg)
	}
	return os.WriteFile(filepath.Join(dir, "faults.md"), []byte(b.String()), 0o644)
}

// gate skips the suite outside 'make test-faults', saying so.
func gate(t *testing.T) {
	t.Helper()
	if os.Getenv(envFaults) != "1" {
		t.Skipf("the fault-injection suite kills control-plane processes for minutes: it runs with 'make test-faults' (%s=1), which .ci/run calls", envFaults)
	}
	cptest.RequireBinaries(t)
}

// record checks that c ended as an error whose message names every want,
// and adds it to the table.
func record(t *testing.T, fault string, c scenarios.CaseResult, want ...string) {
	t.Helper()
	ok := c.Verdict == scenarios.Error && c.Observed == scenarios.Error
	for _, w := range want {
		ok = ok && strings.Contains(c.Message, w)
	}
	table.mu.Lock()
	table.rows = append(table.rows, row{Fault: fault, Subject: c.Subject, Verdict: c.Verdict, Observed: c.Observed, OK: ok, Message: c.Message})
	table.mu.Unlock()
	if !ok {
		t.Errorf("%s with %s: verdict %s (observed %s), want an error naming %q: %s", fault, c.Subject, c.Verdict, c.Observed, want, c.Message)
	}
	for _, a := range c.Assertions {
		if !a.OK && c.Verdict != scenarios.Error {
			t.Errorf("%s with %s: assertion %s failed on a broken run", fault, c.Subject, a.Name)
		}
	}
}

func scenario(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Decode(name+".yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startCluster(t *testing.T, cfg controlplane.Config) *cluster.Embedded {
	t.Helper()
	cfg.GracePeriod, cfg.MonitorPeriod, cfg.Dir = 10*time.Second, time.Second, t.TempDir()
	e, err := cluster.StartEmbedded(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// trigger calls inject once, when a Node's boot ID changes (boot) or its
// Ready condition comes back True after it was not (ready).
func trigger(ctx context.Context, t *testing.T, rc *rest.Config, on string, inject func(node string)) {
	cs := kubernetes.NewForConfigOrDie(rc)
	go func() {
		boots, notReady := map[string]string{}, map[string]bool{}
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, n := range nodes.Items {
				boot := n.Status.NodeInfo.BootID
				ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
					return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
				})
				fire := (on == "boot" && boots[n.Name] != "" && boot != boots[n.Name]) || (on == "ready" && ready && notReady[n.Name])
				boots[n.Name] = boot
				if !ready {
					notReady[n.Name] = true
				}
				if fire {
					t.Logf("fault trigger (%s) on node %s", on, n.Name)
					inject(n.Name)
					return
				}
			}
		}
	}()
}

// runCase runs s with subj and the fault inject fires on.
func runCase(t *testing.T, cl scenarios.Cluster, be scenarios.Backend, s *scenarios.Scenario, subj scenarios.Subject,
	on string, inject func(node string)) scenarios.CaseResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trigger(ctx, t, cl.RESTConfig(), on, inject)
	res := runner.Run(ctx, runner.Config{Cluster: cl, Backend: be, Subjects: []scenarios.Subject{subj}, Scenarios: []*scenarios.Scenario{s}, Parallel: 1})
	if len(res.Cases) != 1 {
		t.Fatalf("%d cases", len(res.Cases))
	}
	c := res.Cases[0]
	t.Logf("%s: %s (observed %s): %s", reports.CaseName(c), c.Verdict, c.Observed, c.Message)
	return c
}

var inProcess = []string{subject.BootID, subject.Legacy}

// TestKillComponents SIGKILLs each control-plane process in the middle
// of a case; the plane restarts it, and the case is an error naming it.
func TestKillComponents(t *testing.T) {
	gate(t)
	for _, comp := range []string{controlplane.BinKubeAPIServer, controlplane.BinKubeControllerManager, controlplane.BinEtcd} {
		for _, name := range inProcess {
			t.Run(comp+"/"+name, func(t *testing.T) {
				e := startCluster(t, controlplane.Config{})
				subj, _ := subject.New(name, e)
				c := runCase(t, e, &backend.Fake{Cluster: e}, scenario(t, "fault-window"), subj, "boot", func(string) {
					if err := syscall.Kill(e.CP.Pids()[comp], syscall.SIGKILL); err != nil {
						t.Errorf("kill %s: %v", comp, err)
					}
				})
				record(t, "SIGKILL "+comp+" (restarted)", c, "cluster fault during the case", comp+" down")
				if len(e.CP.Outages()) == 0 || e.CP.Err() != nil {
					t.Errorf("%s was not restarted: outages %v, plane: %v", comp, e.CP.Outages(), e.CP.Err())
				}
			})
		}
	}
}

// proxy forwards TCP to the API server and can cut every connection,
// as a network fault between the harness and the API server would.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// proxied is the embedded cluster as the harness (observer, engine,
// health monitor) reaches it through a proxy; nodes and subjects reach
// the API server directly.
type proxied struct {
	*cluster.Embedded
	host string
}

func (p proxied) RESTConfig() *rest.Config {
	rc := p.Embedded.RESTConfig()
	rc.Host = p.host
	return rc
}

// TestWatchExpiry forces the observer's watches to expire: etcd is
// compacted past their resource versions and their connections are cut,
// so they resume into 410 Gone (the API server runs without a watch
// cache to serve them) and relist. The case is an invalid run with an
// observation gap, and the API server was never down.
func TestWatchExpiry(t *testing.T) {
	gate(t)
	for _, name := range inProcess {
		t.Run(name, func(t *testing.T) {
			e := startCluster(t, controlplane.Config{ExtraArgs: map[string][]string{controlplane.BinKubeAPIServer: {"--watch-cache=false"}}})
			px := newProxy(t, strings.TrimPrefix(e.CP.APIServerURL(), "https://"))
			cl := proxied{Embedded: e, host: "https://" + px.ln.Addr().String()}
			subj, _ := subject.New(name, cl)
			admin := kubernetes.NewForConfigOrDie(e.RESTConfig())
			c := runCase(t, cl, &backend.Fake{Cluster: cl}, scenario(t, "fault-window"), subj, "boot", func(string) {
				ctx := context.Background()
				// Writes the observer does not watch move etcd's revision
				// past every watch's resource version.
				for i := range 3 {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("revision-%d", i)}}
					_, _ = admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
				}
				rev, err := e.CP.CompactEtcd(ctx)
				if err != nil {
					t.Errorf("compact etcd: %v", err)
				}
				t.Logf("etcd compacted at revision %d; cutting the harness's connections", rev)
				px.cut()
			})
			record(t, "watch expiry (etcd compaction, 410 Gone)", c, "invalid run: observation gap", "410 Gone")
			if slices.ContainsFunc(c.Trace, func(e trace.Event) bool { return e.Kind == trace.KindCluster }) {
				t.Errorf("a cluster fault was seen; the watch expiry must be judged on its own")
			}
		})
	}
}

// TestSubjectCrash SIGKILLs the subject's process mid-case (bootproof's
// reconciler as an exec subject: the in-process one shares the harness's
// process): the case is an error naming the subject.
func TestSubjectCrash(t *testing.T) {
	gate(t)
	t.Setenv(envRunCLI, "1")
	t.Setenv("BOOTPROOF", os.Args[0])
	for _, name := range []string{"bootproof-bootid", "bootproof-legacy"} {
		t.Run(name, func(t *testing.T) {
			e := startCluster(t, controlplane.Config{})
			f, err := subject.ReadFile(filepath.Join("..", "..", "..", "examples", "subjects", name+".yaml"), subject.EnvLookup)
			if err != nil {
				t.Fatal(err)
			}
			subj := subject.FromFile(f, e, t.TempDir(), "")
			c := runCase(t, e, &backend.Fake{Cluster: e}, scenario(t, "fault-window"), subj, "boot", func(string) {
				for _, pid := range children(os.Getpid()) {
					if strings.Contains(cmdline(pid), " kmm ") {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			record(t, "subject crash (SIGKILL of its process)", c, "subject fault: subject "+name+" stopped during the case", "signal: killed")
		})
	}
}

// TestUnplannedReboot reboots a node behind the harness's back during a
// no-reboot control: the case is an invalid run.
func TestUnplannedReboot(t *testing.T) {
	gate(t)
	for _, name := range inProcess {
		t.Run(name, func(t *testing.T) {
			e := startCluster(t, controlplane.Config{})
			be := &capture{Backend: &backend.Fake{Cluster: e}}
			subj, _ := subject.New(name, e)
			c := runCase(t, e, be, scenario(t, "fault-no-reboot"), subj, "ready", func(node string) {
				go func() {
					if _, err := be.set().Reboot(context.Background(), node, nodeapi.RebootRequest{Mode: "reset", Downtime: time.Second}); err != nil {
						t.Errorf("reboot %s: %v", node, err)
					}
				}()
			})
			record(t, "reboot nobody asked for (no-reboot control)", c, "invalid run: unplanned reboot")
			if !slices.ContainsFunc(c.Reboots, func(m scenarios.RebootMetric) bool { return !m.Planned }) {
				t.Errorf("results list no unplanned reboot: %+v", c.Reboots)
			}
		})
	}
}

// capture is a node backend that keeps the last node set it provisioned.
type capture struct {
	scenarios.Backend
	mu   sync.Mutex
	last nodeapi.NodeSet
}

func (c *capture) Provision(ctx context.Context, req nodeapi.ProvisionRequest) (nodeapi.NodeSet, error) {
	ns, err := c.Backend.Provision(ctx, req)
	c.mu.Lock()
	c.last = ns
	c.mu.Unlock()
	return ns, err
}

func (c *capture) set() nodeapi.NodeSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// TestSIGINT interrupts 'bootproof run' mid-case, once (it stops in
// order) and twice (it forces the exit after a bounded cleanup): exit 3,
// every case not run, nothing judged, and no process or directory of the
// embedded cluster left.
func TestSIGINT(t *testing.T) {
	gate(t)
	for _, signals := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d signal(s)", signals), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "run", "--scenario-file", "testdata/fault-window.yaml", "--subject", "bootid", "--subject", "legacy",
				"--parallel", "2", "--report-dir", dir)
			cmd.Env = append(os.Environ(), envRunCLI+"=1")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			running := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(stdout)
				n := 0
				for sc.Scan() {
					t.Logf("bootproof: %s", sc.Text())
					if strings.HasPrefix(sc.Text(), "running ") {
						if n++; n == 2 {
							close(running)
						}
					}
				}
			}()
			select {
			case <-running:
			case <-time.After(3 * time.Minute):
				t.Fatal("no case started within 3 minutes")
			}
			// Into the cases' timelines (the fast reboot, the quiet window).
			time.Sleep(8 * time.Second)
			kids := children(cmd.Process.Pid)
			cpDir := ""
			for _, pid := range kids {
				for _, arg := range strings.Split(cmdline(pid), " ") {
					if d, ok := strings.CutPrefix(arg, "--data-dir="); ok {
						cpDir = filepath.Dir(d)
					}
				}
			}
			if len(kids) < 3 || cpDir == "" {
				t.Fatalf("children %v, control-plane directory %q: want etcd, kube-apiserver, kube-controller-manager", kids, cpDir)
			}
			start := time.Now()
			for i := range signals {
				if i > 0 {
					time.Sleep(500 * time.Millisecond)
				}
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			limit := 3 * time.Minute
			if signals == 2 {
				limit = 30 * time.Second // ForcedCleanupTimeout and a margin
			}
			select {
			case err = <-done:
			case <-time.After(limit):
				t.Fatalf("bootproof did not exit within %s of %d SIGINT(s)", limit, signals)
			}
			t.Logf("exited after %s: %v", time.Since(start).Round(time.Millisecond), err)
			if code := cmd.ProcessState.ExitCode(); code != cli.ExitInfra {
				t.Errorf("exit code %d, want %d", code, cli.ExitInfra)
			}
			time.Sleep(500 * time.Millisecond)
			for _, pid := range kids {
				if alive(pid) {
					t.Errorf("child %d (%s) outlived bootproof", pid, cmdline(pid))
				}
			}
			if _, err := os.Stat(cpDir); !os.IsNotExist(err) {
				t.Errorf("the control plane's directory %s (its CA key) is left: %v", cpDir, err)
			}
			fault := "SIGINT of the run"
			if signals == 2 {
				fault = "SIGINT twice (forced exit)"
			}
			res, err := reports.ReadResults(filepath.Join(dir, reports.ResultsFile))
			if signals == 2 && err != nil {
				// A forced exit may end before the reports: then nothing
				// was judged either.
				table.mu.Lock()
				table.rows = append(table.rows, row{Fault: fault, Subject: "bootid, legacy", Verdict: "no report", Observed: "-", OK: true,
					Message: "forced exit before the reports were written: exit 3, nothing judged, nothing left"})
				table.mu.Unlock()
				return
			}
			if err != nil {
				t.Fatalf("no results after one SIGINT: %v", err)
			}
			for _, c := range res.Cases {
				record(t, fault, c, scenarios.NotRunInterrupted)
				if len(c.Assertions) != 0 {
					t.Errorf("%s: assertions judged on an interrupted run: %+v", reports.CaseName(c), c.Assertions)
				}
			}
		})
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			out = append(out, p)
		}
	}
	return out
}

func cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(data), "\x00", " ")
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
