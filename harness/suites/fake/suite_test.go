package fake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/bootproof/bootproof/harness/backend"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/harness/runner"
	"github.com/bootproof/bootproof/harness/subject"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

const (
	grace   = 10 * time.Second
	monitor = time.Second
)

func TestFakeNodes(t *testing.T) {
	cptest.RequireBinaries(t)
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
	results  = map[string]scenarios.CaseResult{}
	embedded *cluster.Embedded
)

func caseKey(scenario, subj string) string { return subj + "/" + scenario }

func init() {
	var err error
	if catalog, err = scenarios.Catalog(); err != nil {
		panic(err)
	}
}

// selected reports whether the label filter keeps a case.
func selected(s *scenarios.Scenario, subj string) bool {
	labels := Labels(append([]string{subj}, s.Labels...))
	return labels.MatchesLabelFilter(GinkgoLabelFilter())
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	embedded, err = cluster.StartEmbedded(ctx, controlplane.Config{GracePeriod: grace, MonitorPeriod: monitor})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(embedded.Stop)

	var run []*scenarios.Scenario
	for _, s := range catalog {
		for _, subj := range subjects {
			if selected(s, subj) {
				run = append(run, s)
				break
			}
		}
	}
	var subs []scenarios.Subject
	for _, name := range subjects {
		sub, err := subject.New(name, embedded)
		Expect(err).NotTo(HaveOccurred())
		subs = append(subs, sub)
	}
	res := runner.Run(context.WithoutCancel(ctx), runner.Config{
		Cluster: embedded, Backend: &backend.Fake{Cluster: embedded}, Subjects: subs, Scenarios: run,
		Parallel: envInt("BOOTPROOF_SUITE_PARALLEL", 4), MaxNodes: envInt("BOOTPROOF_SUITE_MAX_NODES", 10),
	})
	for _, r := range res.Cases {
		results[caseKey(r.Scenario, r.Subject)] = r
	}
	dir := os.Getenv("BOOTPROOF_SUITE_REPORT_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "reports", "embedded")
	}
	Expect(reports.Write(dir, res, time.Now())).To(Succeed())
	GinkgoWriter.Printf("HTML report: %s\n", filepath.Join(dir, reports.HTMLFile))
}, NodeTimeout(30*time.Minute))

var _ = Describe("the scenario catalog", func() {
	for _, s := range catalog {
		for _, subj := range subjects {
			labels := Label(append([]string{subj}, s.Labels...)...)
			It(fmt.Sprintf("[%s] %s", subj, s.Name), labels, func() {
				r, ok := results[caseKey(s.Name, subj)]
				Expect(ok).To(BeTrue(), "case did not run")
				if r.Verdict == scenarios.Skipped {
					Skip(r.Message)
				}
				Expect(r.Verdict).To(Equal(scenarios.Pass), "%s: expected %s, observed %s: %s\n%s",
					reports.CaseName(r), r.Expected, r.Observed, r.Message, assertions(r))
			})
		}
	}
})

func assertions(r scenarios.CaseResult) string {
	out := ""
	for _, a := range r.Assertions {
		out += fmt.Sprintf("  %s ok=%v: %s\n", a.Name, a.OK, a.Message)
	}
	return out
}
