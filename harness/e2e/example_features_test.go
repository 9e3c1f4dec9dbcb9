package e2e_test

import (
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/bootproof/bootproof/harness/e2e"
)

// An operator's e2e-framework test runs the fast-reboot scenarios against
// its operator, described by a subject file, on the cluster the suite's
// TestMain created as "bootproof" (see example_test.go).
func ExampleCatalogFeatures() {
	var testenv env.Environment // the suite's, from TestMain
	var t *testing.T            // the test's
	feats, err := e2e.CatalogFeatures(e2e.Config{
		ClusterName: "bootproof",
		Subject:     e2e.SubjectFile("test/my-operator.subject.yaml", t.TempDir()),
	}, "fast-reboot-*")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Test(t, feats...)
}
