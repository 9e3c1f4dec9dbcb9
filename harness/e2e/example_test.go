package e2e_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/harness/controlplane/e2eprovider"
	"github.com/bootproof/bootproof/harness/e2e"
)

// This file is what an operator project's e2e-framework suite writes to
// run bootproof's catalog: a TestMain that creates the embedded cluster
// (e2eprovider) and tests that run catalog features against a subject.
// Here the subjects are bootproof's own reconcilers: bootid, which must
// pass, and legacy, which must fail the fast reboot (its features pass
// when bootproof catches it).

const clusterName = "bootproof-e2e"

var (
	testenv env.Environment
	// missing is why the control plane cannot start here (its binaries
	// are not built); the tests then skip, or fail under make test.
	missing error
)

func TestMain(m *testing.M) {
	testenv = env.New()
	if _, err := controlplane.FindBinaries(""); err != nil {
		missing = err
		os.Exit(m.Run())
	}
	p := e2eprovider.New(controlplane.Config{MonitorPeriod: time.Second})
	testenv.Setup(envfuncs.CreateClusterWithOpts(p, clusterName, e2eprovider.WithGracePeriod(10*time.Second)))
	testenv.Finish(envfuncs.DestroyCluster(clusterName))
	os.Exit(testenv.Run(m))
}

func requireCluster(t *testing.T) {
	t.Helper()
	if missing != nil {
		if os.Getenv(cptest.EnvRequire) == "1" {
			t.Fatalf("embedded control plane required (%s=1): %v", cptest.EnvRequire, missing)
		}
		t.Skipf("needs the embedded control plane's binaries, which are missing (run 'make test', which builds them): %v", missing)
	}
}

// TestCatalogFeatures runs the fast reboot as an e2e-framework feature
// with both bundled subjects (the Ginkgo suite runs the whole catalog).
func TestCatalogFeatures(t *testing.T) {
	requireCluster(t)
	for _, name := range []string{"bootid", "legacy"} {
		feats, err := e2e.CatalogFeatures(e2e.Config{ClusterName: clusterName, Subject: e2e.Bundled(name)}, "fast-reboot-0.5g")
		if err != nil {
			t.Fatal(err)
		}
		if len(feats) != 1 || feats[0].Name() != "fast-reboot-0.5g" || feats[0].Labels()[e2e.LabelPrecondition][0] != "fast" {
			t.Fatalf("features %v, want fast-reboot-0.5g labelled precondition fast", feats)
		}
		t.Run(name, func(t *testing.T) { testenv.Test(t, feats...) })
	}
}

// TestCatalogFeaturesRejects: a bad Config or an unknown scenario is an
// error naming what to fix.
func TestCatalogFeaturesRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  e2e.Config
		args []string
		want string
	}{
		{"no cluster name", e2e.Config{Subject: e2e.Bundled("bootid")}, nil, "ClusterName is empty"},
		{"no subject", e2e.Config{ClusterName: clusterName}, nil, "Subject is nil"},
		{"unknown scenario", e2e.Config{ClusterName: clusterName, Subject: e2e.Bundled("bootid")}, []string{"no-such-scenario"}, "no-such-scenario"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e2e.CatalogFeatures(tc.cfg, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
