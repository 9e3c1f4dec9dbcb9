package controlplane

import (
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// GuestHostAddress is the address under which QEMU user-mode networking
// shows the host's loopback to a guest. The API server's serving
// certificate names it so VM nodes can verify the server.
const GuestHostAddress = "10.0.2.2"

// ControlPlane is a running embedded cluster: etcd, kube-apiserver and
// kube-controller-manager as child processes of this process.
type ControlPlane struct {
	cfg    Config
	dir    string
	ownDir bool
	bins   Binaries

	ca       *CA
	etcdCA   *CA
	apiURL   string
	kcmURL   string
	kubeconf string
	rest     *rest.Config

	ports portSet
	procs []*process // in start order
	// died is closed when a process ends before Stop.
	died     chan struct{}
	diedErr  error
	diedOnce sync.Once
	stopOnce sync.Once
	stopping chan struct{}

	mu    sync.Mutex
	nodes map[string]*Credentials
	// unregister removes the forced-exit cleanup (shutdown.Register).
	unregister func()
	etcdURL    string
	etcdClient *http.Client
	// restartMu orders restarts (supervise) before Stop.
	restartMu sync.Mutex
	outages   []Outage
	restarts  int
}

// Kubeconfig is the path of the cluster-admin kubeconfig.
func (cp *ControlPlane) Kubeconfig() string { return cp.kubeconf }

// RESTConfig returns a copy of the cluster-admin client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(cp.rest) }

// APIServerURL is the https URL of kube-apiserver on 127.0.0.1.
func (cp *ControlPlane) APIServerURL() string { return cp.apiURL }

// CACertPEM is the cluster CA certificate clients verify the API server with.
func (cp *ControlPlane) CACertPEM() []byte { return cp.ca.CertPEM }

// Dir is the run directory (PKI, kubeconfigs, logs/).
func (cp *ControlPlane) Dir() string { return cp.dir }

// Config returns the defaulted configuration the plane runs with.
func (cp *ControlPlane) Config() Config { return cp.cfg }

// Pids returns the process ids of the children by name.
func (cp *ControlPlane) Pids() map[string]int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	out := map[string]int{}
	for _, p := range cp.procs {
		out[p.name] = p.Pid()
	}
	return out
}

// Ports returns the TCP ports the processes listen on, on 127.0.0.1.
func (cp *ControlPlane) Ports() map[string]int {
	return cp.ports.byName()
}
