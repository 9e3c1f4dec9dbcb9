// Package e2e offers bootproof's scenario catalog to
// sigs.k8s.io/e2e-framework suites: each scenario is a features.Feature
// that runs it against the suite's operator on the suite's cluster and
// asserts bootproof's verdict, so an operator project's own e2e suite
// runs the catalog with a few lines:
//
//	var testenv env.Environment
//
//	func TestMain(m *testing.M) {
//		testenv = env.New()
//		p := e2eprovider.New(controlplane.Config{})
//		testenv.Setup(envfuncs.CreateClusterWithOpts(p, "bootproof", e2eprovider.WithGracePeriod(10*time.Second)))
//		testenv.Finish(envfuncs.DestroyCluster("bootproof"))
//		os.Exit(testenv.Run(m))
//	}
//
//	func TestReboots(t *testing.T) {
//		feats, err := e2e.CatalogFeatures(e2e.Config{ClusterName: "bootproof",
//			Subject: e2e.SubjectFile("test/bootproof-subject.yaml", t.TempDir())})
//		if err != nil {
//			t.Fatal(err)
//		}
//		testenv.Test(t, feats...)
//	}
//
// The nodes are bootproof's simulated kubelets (package fakes), joined to
// the suite's cluster for each case and removed after it. The verdict is
// bootproof's: a feature's assessment fails when the case's verdict is
// not pass (the subject did not get what the scenario or its subject
// file expects, or the case could not be judged), and is skipped, with
// the reason, when the case could not run here.
package e2e
