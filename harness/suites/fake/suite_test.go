package fake_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/runner"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
)

const (
	grace   = 10 * time.Second
	monitor = time.Second
	// caseTimeout bounds one case; the longest takes about a minute.
	caseTimeout = 10 * time.Minute
	// caseEntry names the report entry that carries a case's result.
	caseEntry = "bootproof-case"
)

func TestFakeNodes(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "bootproof: catalog on the embedded cluster with simulated nodes")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

var (
	catalog  []*scenarios.Scenario
	subjects = []string{subject.BootID, subject.Legacy}

	// embedded is the control plane, on process 1 only.
	embedded *cluster.Embedded
	// cl is the control plane as this process reaches it, nodes the
	// simulated-node backend on it.
	cl    scenarios.Cluster
	nodes scenarios.Backend
)

func init() {
	var err error
	if catalog, err = scenarios.Catalog(); err != nil {
		panic(err)
	}
}

// attached is the suite's embedded control plane as every Ginkgo process
// reaches it: through its kubeconfig, with per-node and per-subject
// identities issued through CertificateSigningRequests, as 'bootproof run
// --cluster kubeconfig --node-credentials csr' does. The embedded plane
// runs the CSR signer for that. Its name stays "embedded", the cluster the
// cases run on. Only process 1 holds the control plane itself, so the
// component exits it supervises are not reported to the cases; the health
// monitor still sees the API server's /readyz and kube-controller-manager's
// leader Lease.
type attached struct{ *cluster.Kubeconfig }

func (attached) Name() string { return "embedded" }

// requireBinaries skips the suite, saying why, when the control-plane
// binaries are missing, or fails it with BOOTPROOF_REQUIRE_CONTROLPLANE=1,
// as cptest.RequireBinaries does for a plain test.
func requireBinaries() {
	if _, err := controlplane.FindBinaries(""); err != nil {
		if os.Getenv(cptest.EnvRequire) == "1" {
			Fail(fmt.Sprintf("embedded control plane required (%s=1): %v", cptest.EnvRequire, err))
		}
		Skip(fmt.Sprintf("needs the embedded control plane's binaries, which are missing (run 'make test', which builds them): %v", err))
	}
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	requireBinaries()
	var err error
	embedded, err = cluster.StartEmbedded(ctx, controlplane.Config{GracePeriod: grace, MonitorPeriod: monitor})
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := cluster.KubeconfigData(embedded)
	Expect(err).NotTo(HaveOccurred())
	return kubeconfig
}, func(ctx SpecContext, kubeconfig []byte) {
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	k, err := cluster.NewKubeconfig(ctx, path, grace, true)
	Expect(err).NotTo(HaveOccurred())
	cl = attached{k}
	nodes = &backend.Fake{Cluster: cl}
}, NodeTimeout(5*time.Minute))

var _ = SynchronizedAfterSuite(func() {}, func() {
	if embedded != nil {
		embedded.Stop()
	}
})

// caseReport is a case's result as a report entry: the cases of every
// Ginkgo process meet in ReportAfterSuite through it. The trace, which
// CaseResult leaves out of its JSON, travels beside it.
type caseReport struct {
	Case  scenarios.CaseResult `json:"case"`
	Trace []trace.Event        `json:"trace"`
}

// String keeps the entry's representation in Ginkgo's own reports short.
func (c caseReport) String() string {
	return fmt.Sprintf("%s: %s", reports.CaseName(c.Case), c.Case.Verdict)
}

// Each case is a spec that runs it. Cases are isolated on the shared
// cluster, so Ginkgo's parallel processes may run them at once: the engine
// gives every case a random id that names its namespace, its nodes and the
// label selecting them, and the in-process subjects (bootid, legacy) are
// started per case, scoped to that namespace and selector. Cluster-scoped
// objects (the CRD, the RBAC manifest, the fleet's ClusterRole) are
// applied idempotently by every case.
var _ = Describe("the scenario catalog", func() {
	// Longest first (scenarios.Cost), so the parallel processes do not
	// end on one long case started last. A case that pauses or restarts
	// its subject needs no Serial: bootid and legacy are started per case,
	// so the pause reaches no other case (runner.Run runs such cases alone
	// only for a ClusterWide subject, which every case shares).
	for _, i := range scenarios.ByCost(catalog, grace) {
		s := catalog[i]
		for _, subj := range subjects {
			args := []any{Label(append([]string{subj}, s.Labels...)...)}
			args = append(args, func(ctx SpecContext) {
				sub, err := subject.New(subj, cl)
				Expect(err).NotTo(HaveOccurred())
				res := runner.Run(ctx, runner.Config{Cluster: cl, Backend: nodes, Subjects: []scenarios.Subject{sub},
					Scenarios: []*scenarios.Scenario{s}, MaxNodes: envInt("BOOTPROOF_SUITE_MAX_NODES", 10)})
				Expect(res.Cases).To(HaveLen(1))
				r := res.Cases[0]
				AddReportEntry(caseEntry, caseReport{Case: r, Trace: r.Trace}, ReportEntryVisibilityNever)
				GinkgoWriter.Printf("%s: %s (observed %s, expected %s): %s\n", reports.CaseName(r), r.Verdict, r.Observed, r.Expected, r.Message)
				if r.Verdict == scenarios.Skipped {
					Skip(r.Message)
				}
				Expect(r.Verdict).To(Equal(scenarios.Pass), "%s: expected %s, observed %s: %s\n%s",
					reports.CaseName(r), r.Expected, r.Observed, r.Message, assertions(r))
			}, NodeTimeout(caseTimeout))
			It(fmt.Sprintf("[%s] %s", subj, s.Name), args...)
		}
	}
})

// The HTML, JSON and Markdown reports cover the cases of every process.
var _ = ReportAfterSuite("bootproof reports", func(report Report) {
	if report.SuiteConfig.DryRun {
		return
	}
	var res scenarios.Results
	for _, spec := range report.SpecReports {
		for _, e := range spec.ReportEntries {
			if e.Name != caseEntry {
				continue
			}
			c, err := decodeCase(e)
			Expect(err).NotTo(HaveOccurred())
			c.Case.Trace = c.Trace
			res.Cases = append(res.Cases, c.Case)
		}
	}
	if len(res.Cases) == 0 {
		GinkgoWriter.Println("no case ran: no report written")
		return
	}
	// Scenario order, then subject order, as runner.Run returns them.
	order := map[string]int{}
	for i, s := range catalog {
		order[s.Name] = i
	}
	slices.SortStableFunc(res.Cases, func(a, b scenarios.CaseResult) int {
		return cmp.Or(cmp.Compare(order[a.Scenario], order[b.Scenario]),
			cmp.Compare(slices.Index(subjects, a.Subject), slices.Index(subjects, b.Subject)))
	})
	dir := os.Getenv("BOOTPROOF_SUITE_REPORT_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "_output", "embedded")
	}
	Expect(reports.Write(dir, res, time.Now())).To(Succeed())
	GinkgoWriter.Printf("HTML report: %s\n", filepath.Join(dir, reports.HTMLFile))
})

// decodeCase reads a case entry: the value itself when the case ran in
// this process, else the JSON it crossed from another process as.
func decodeCase(e types.ReportEntry) (caseReport, error) {
	if c, ok := e.GetRawValue().(caseReport); ok {
		return c, nil
	}
	var c caseReport
	if err := json.Unmarshal([]byte(e.Value.AsJSON), &c); err != nil {
		return c, fmt.Errorf("decode report entry %s: %w", e.Name, err)
	}
	return c, nil
}

func assertions(r scenarios.CaseResult) string {
	out := ""
	for _, a := range r.Assertions {
		out += fmt.Sprintf("  %s ok=%v: %s\n", a.Name, a.OK, a.Message)
	}
	return out
}
