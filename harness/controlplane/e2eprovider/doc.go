// Package e2eprovider makes bootproof's embedded control plane an
// sigs.k8s.io/e2e-framework cluster provider (support.E2EClusterProvider),
// so e2e-framework suites can create it with envfuncs:
//
//	p := e2eprovider.New(controlplane.Config{GracePeriod: 8 * time.Second})
//	testenv.Setup(envfuncs.CreateClusterWithOpts(p, "bootproof"))
//	testenv.Finish(envfuncs.DestroyCluster("bootproof"))
//
// The cluster has no container engine and no real nodes: nodes join as
// bootproof's simulated or VM kubelets, with credentials from
// Provider.ControlPlane().NodeCredentials.
package e2eprovider
