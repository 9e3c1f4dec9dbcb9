package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane/e2eprovider"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/runner"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/scenarios"
)

// Labels every feature carries, for e2e-framework's --labels filter.
const (
	// LabelScenario is the scenario's name.
	LabelScenario = "bootproof.dev/scenario"
	// LabelPrecondition is what the scenario claims of the nodes' Ready
	// condition: fast (reboots inside the grace period), slow, recorded.
	LabelPrecondition = "bootproof.dev/precondition"
)

// Config says where and on what the features run.
type Config struct {
	// ClusterName is the name the suite created its cluster under with
	// envfuncs.CreateCluster*: an e2eprovider cluster (bootproof's
	// embedded control plane) is used as it is, with its own node
	// credentials and grace period; a cluster of another provider is
	// reached through the suite's kubeconfig (envconf.Config), its nodes
	// acting with that identity. Required.
	ClusterName string
	// Subject builds the operator under test on the cluster: Bundled,
	// SubjectFile, or any scenarios.Subject of your own. Required.
	Subject SubjectFunc
	// GracePeriod is the cluster's --node-monitor-grace-period where the
	// provider is not e2eprovider; 0 reads it from its
	// kube-controller-manager (kubeadm-style clusters such as kind).
	GracePeriod time.Duration
	// MaxNodes caps a scenario's node count (0: none).
	MaxNodes int
}

// SubjectFunc builds the subject of a feature's run on cluster cl; runID
// labels (contract.RunLabel) what the subject creates, so that the run's
// end deletes it.
type SubjectFunc func(cl scenarios.Cluster, runID string) (scenarios.Subject, error)

// Bundled is one of bootproof's own reconcilers: "bootid" (tracks boot
// IDs, must pass) or "legacy" (sees only Ready transitions, the negative
// control that must fail fast reboots).
func Bundled(name string) SubjectFunc {
	return func(cl scenarios.Cluster, _ string) (scenarios.Subject, error) {
		if name != subject.BootID && name != subject.Legacy {
			return nil, fmt.Errorf("bundled subject %q: accepted: %s, %s", name, subject.BootID, subject.Legacy)
		}
		return subject.New(name, cl)
	}
}

// SubjectFile is the operator a subject file describes (apiVersion
// bootproof.dev/v1alpha1, kind Subject: an exec command or a Deployment,
// with the expectations it states), ${VAR}s taken from the environment;
// an exec subject's output goes to logDir/<name>.log.
func SubjectFile(path, logDir string) SubjectFunc {
	return func(cl scenarios.Cluster, runID string) (scenarios.Subject, error) {
		f, err := subject.ReadFile(path, subject.EnvLookup)
		if err != nil {
			return nil, err
		}
		return subject.FromFile(f, cl, logDir, runID), nil
	}
}

// validate says which field is missing.
func (c Config) validate() error {
	switch {
	case c.ClusterName == "":
		return fmt.Errorf("e2e.Config.ClusterName is empty: name the cluster the suite created with envfuncs.CreateCluster*")
	case c.Subject == nil:
		return fmt.Errorf("e2e.Config.Subject is nil: give a function that builds the operator under test")
	case c.MaxNodes < 0 || c.GracePeriod < 0:
		return fmt.Errorf("e2e.Config: MaxNodes %d and GracePeriod %s must not be negative", c.MaxNodes, c.GracePeriod)
	}
	return nil
}

// CatalogFeatures returns a feature for each catalog scenario named (all
// of them when none is), in catalog order.
func CatalogFeatures(c Config, names ...string) ([]features.Feature, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	catalog, err := scenarios.Catalog()
	if err != nil {
		return nil, err
	}
	selected := catalog
	if len(names) > 0 {
		if selected, err = scenarios.Select(catalog, names, nil); err != nil {
			return nil, err
		}
	}
	out := make([]features.Feature, 0, len(selected))
	for _, s := range selected {
		out = append(out, Feature(s, c))
	}
	return out, nil
}

// Feature is scenario s as an e2e-framework feature: its one assessment
// runs s against c's subject on c's cluster and asserts the verdict.
func Feature(s *scenarios.Scenario, c Config) features.Feature {
	return features.New(s.Name).
		WithLabel(LabelScenario, s.Name).
		WithLabel(LabelPrecondition, string(s.Precondition)).
		Assess("the subject gets the verdict bootproof expects", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			t.Helper()
			if err := c.validate(); err != nil {
				t.Fatal(err)
			}
			for _, r := range run(ctx, t, s, c, cfg).Cases {
				report(t, r)
			}
			return ctx
		}).Feature()
}

// run runs s with c's subject on the suite's cluster, as a run of its
// own: its Lease marks it alive for 'bootproof cleanup', and its end
// deletes every object labelled with its ID.
func run(ctx context.Context, t *testing.T, s *scenarios.Scenario, c Config, cfg *envconf.Config) scenarios.Results {
	cl, err := clusterOf(ctx, c, cfg)
	if err != nil {
		t.Fatalf("bootproof: cluster %q: %v", c.ClusterName, err)
	}
	r, err := runs.Start(ctx, cl.RESTConfig(), runs.NewID())
	if err != nil {
		t.Fatalf("bootproof: start a run on cluster %q: %v", c.ClusterName, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := r.Finish(ctx); err != nil {
			t.Errorf("bootproof: run %s: delete its objects: %v", r.ID, err)
		}
	})
	subj, err := c.Subject(cl, r.ID)
	if err != nil {
		t.Fatalf("bootproof: subject: %v", err)
	}
	return runner.Run(ctx, runner.Config{Cluster: cl, Backend: &backend.Fake{Cluster: cl}, Subjects: []scenarios.Subject{subj},
		Scenarios: []*scenarios.Scenario{s}, MaxNodes: c.MaxNodes, RunID: r.ID})
}

// clusterOf is the suite's cluster as the engine consumes it.
func clusterOf(ctx context.Context, c Config, cfg *envconf.Config) (scenarios.Cluster, error) {
	p, ok := ctx.Value(support.ClusterNameContextKey(c.ClusterName)).(support.E2EClusterProvider)
	if !ok {
		return nil, fmt.Errorf("no cluster of that name in the context: create it in the suite's Setup with envfuncs.CreateCluster*")
	}
	if ep, ok := p.(*e2eprovider.Provider); ok && ep.ControlPlane() != nil {
		return &cluster.Embedded{CP: ep.ControlPlane()}, nil
	}
	return cluster.NewKubeconfig(ctx, cfg.KubeconfigFile(), c.GracePeriod, false)
}

// reporter is the part of *testing.T report uses.
type reporter interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Skipf(format string, args ...any)
}

// report logs the case r on t and fails t unless its verdict is pass
// (skipped: t is skipped, with the reason).
func report(t reporter, r scenarios.CaseResult) {
	t.Helper()
	var lines []string
	for _, a := range r.Assertions {
		state := "ok"
		if !a.OK {
			state = "FAILED"
		}
		lines = append(lines, fmt.Sprintf("  %s %s: %s", a.Name, state, a.Message))
	}
	t.Logf("bootproof: %s with %s: observed %s, expected %s, verdict %s\n%s", r.Scenario, r.Subject, r.Observed, r.Expected, r.Verdict,
		strings.Join(lines, "\n"))
	switch r.Verdict {
	case scenarios.Pass:
	case scenarios.Skipped:
		t.Skipf("bootproof: %s with %s not run: %s", r.Scenario, r.Subject, r.Message)
	case scenarios.Error:
		t.Errorf("bootproof: %s with %s could not be judged (error): %s", r.Scenario, r.Subject, r.Message)
	default:
		t.Errorf("bootproof: %s with %s: verdict %s: %s", r.Scenario, r.Subject, r.Verdict, r.Message)
	}
}
