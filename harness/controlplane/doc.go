// Package controlplane runs an embedded Kubernetes control plane - etcd,
// kube-apiserver and kube-controller-manager - as child processes, with no
// container engine.
//
// Start writes a fresh PKI (a cluster CA and a separate etcd CA, generated
// with the standard library), starts etcd on 127.0.0.1 reachable only with
// a client certificate from the etcd CA (which only the API server holds),
// kube-apiserver on 127.0.0.1 with RBAC, the Node authorizer and the
// NodeRestriction admission plugin, and kube-controller-manager with the
// node lifecycle controller and the controllers that shape node and pod
// state, using the grace and monitor periods from Config. Ports are chosen
// free at start. It returns when /readyz answers, the controller manager is
// healthy and the RBAC bootstrap policy and the default namespace exist.
//
// Every child runs in its own process group with a parent-death signal
// (SIGKILL), logs to <dir>/logs/<name>.log and has a pid file in <dir>.
// Stop sends SIGTERM to each group, then SIGKILL after Config.StopTimeout.
// A child that exits early turns into an *ExitError quoting its log's tail.
//
// NodeCredentials issues a kubelet identity (system:node:<name>, group
// system:nodes) so simulated and VM nodes act with exactly the rights a
// real kubelet has.
//
// Binaries come from Config.BinDir alone when it is set; else from
// $BOOTPROOF_BIN_DIR, ./bin and the checkout's bin/, the executable's own
// directory, and the per-user cache that package cpbuild fills
// ('bootproof controlplane build'; 'make controlplane' builds into the
// checkout's bin/ with the same code); etcd and kube-apiserver also from
// envtest's $KUBEBUILDER_ASSETS when their versions fit (EnvtestFit).
//
// Package e2eprovider adapts this package to sigs.k8s.io/e2e-framework.
package controlplane
