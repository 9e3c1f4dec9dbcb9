package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/harness/shutdown"
)

// GuestHostAddress is the address under which QEMU user-mode networking
// shows the host's loopback to a guest. The API server's serving
// certificate names it so VM nodes can verify the server.
const GuestHostAddress = "10.0.2.2"

// maxStartAttempts bounds retries when a chosen port was taken before the
// process bound it.
const maxStartAttempts = 3

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

	ports map[string]int
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

// Credentials are a client identity of the cluster.
type Credentials struct {
	// Kubeconfig is the path of a self-contained kubeconfig file.
	Kubeconfig string
	RESTConfig *rest.Config
}

// Start brings up etcd, kube-apiserver and kube-controller-manager and
// returns when the API is ready, RBAC is bootstrapped and the controller
// manager is healthy. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bins, err := FindBinaries(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 1; attempt <= maxStartAttempts; attempt++ {
		cp, err := start(ctx, cfg, bins)
		if err == nil {
			return cp, nil
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			break
		}
		logr.FromContextOrDiscard(ctx).Info("port taken before bind, retrying with new ports", "attempt", attempt)
	}
	return nil, lastErr
}

func start(ctx context.Context, cfg Config, bins Binaries) (_ *ControlPlane, retErr error) {
	log := logr.FromContextOrDiscard(ctx).WithName("controlplane")
	cp := &ControlPlane{cfg: cfg, bins: bins, died: make(chan struct{}), stopping: make(chan struct{}),
		nodes: map[string]*Credentials{}}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "bootproof-controlplane-")
		if err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
		cp.dir, cp.ownDir = d, true
	} else {
		d, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("run directory %s: %w", cfg.Dir, err)
		}
		cp.dir = d
	}
	// A forced exit (a second SIGINT) kills the processes and removes the
	// directory with the CA key at once.
	cp.unregister = shutdown.Register("embedded control plane "+cp.dir, cp.kill)
	defer func() {
		if retErr != nil {
			cp.Stop()
		}
	}()
	for _, sub := range []string{"pki", "logs", "nodes"} {
		if err := os.MkdirAll(filepath.Join(cp.dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
	}
	l := newLayout(cp.dir)
	// etcd keeps its data in a fresh directory per start.
	if err := os.RemoveAll(l.etcdData); err != nil {
		return nil, fmt.Errorf("clear etcd data: %w", err)
	}

	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	l.ports = portSet{etcdClient: ports[0], etcdPeer: ports[1], apiServer: ports[2], controllerManager: ports[3]}
	cp.ports = l.ports.byName()
	cp.apiURL = l.apiServerURL()
	cp.kcmURL = l.controllerManagerURL()

	if err := cp.writePKI(l.pki); err != nil {
		return nil, err
	}

	deadline, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	etcdURL := l.etcdURL()
	log.V(1).Info("starting process", "process", BinEtcd, "url", etcdURL)
	etcdClient, err := tlsClient(cp.etcdCA.CertPEM, l.pki.apiEtcdClientCert, l.pki.apiEtcdClientKey)
	if err != nil {
		return nil, err
	}
	cp.etcdURL, cp.etcdClient = etcdURL, etcdClient
	if _, err := cp.spawnReady(deadline, procSpec{name: BinEtcd, bin: bins.Etcd, args: etcdArgs(l), client: etcdClient, health: etcdURL + "/health"}); err != nil {
		return nil, err
	}

	log.V(1).Info("starting process", "process", BinKubeAPIServer, "url", cp.apiURL)
	admin, err := cp.ca.Issue(CertRequest{CommonName: "bootproof-admin", Organizations: []string{"system:masters"}, Client: true})
	if err != nil {
		return nil, err
	}
	cp.kubeconf = l.adminKubeconfig
	if err := writeKubeconfig(cp.kubeconf, cp.apiURL, "bootproof-admin", cp.ca.CertPEM, admin); err != nil {
		return nil, err
	}
	cp.rest = restConfig(cp.apiURL, cp.ca.CertPEM, admin)
	adminHTTP, err := rest.HTTPClientFor(cp.rest)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	if _, err := cp.spawnReady(deadline, procSpec{name: BinKubeAPIServer, bin: bins.KubeAPIServer, args: apiServerArgs(l), client: adminHTTP, health: cp.apiURL + "/readyz"}); err != nil {
		return nil, err
	}

	kcmClient, err := cp.ca.Issue(CertRequest{CommonName: "system:kube-controller-manager", Client: true})
	if err != nil {
		return nil, err
	}
	if err := writeKubeconfig(l.kcmKubeconfig, cp.apiURL, "system:kube-controller-manager", cp.ca.CertPEM, kcmClient); err != nil {
		return nil, err
	}
	log.V(1).Info("starting process", "process", BinKubeControllerManager, "url", cp.kcmURL)
	kcmHTTP, err := tlsClient(cp.ca.CertPEM, "", "")
	if err != nil {
		return nil, err
	}
	if _, err := cp.spawnReady(deadline, procSpec{name: BinKubeControllerManager, bin: bins.KubeControllerManager, args: controllerManagerArgs(cfg, l), client: kcmHTTP, health: cp.kcmURL + "/healthz"}); err != nil {
		return nil, err
	}
	if err := cp.waitBootstrap(deadline); err != nil {
		return nil, err
	}
	go cp.supervise()
	log.Info("control plane ready", "apiserver", cp.apiURL, "kubeconfig", cp.kubeconf, "dir", cp.dir,
		"gracePeriod", cfg.GracePeriod, "monitorPeriod", cfg.MonitorPeriod)
	return cp, nil
}

// spawnReady starts the process spec describes and waits until it
// answers its health check; it replaces a process of the same name.
func (cp *ControlPlane) spawnReady(ctx context.Context, spec procSpec) (*process, error) {
	args := append(slices.Clone(spec.args), cp.cfg.ExtraArgs[spec.name]...)
	p, err := startProcess(spec.name, spec.bin, args, cp.dir, filepath.Join(cp.dir, "logs"))
	if err != nil {
		return nil, err
	}
	p.spec = spec
	cp.mu.Lock()
	if i := slices.IndexFunc(cp.procs, func(q *process) bool { return q.name == spec.name }); i >= 0 {
		cp.procs[i] = p
	} else {
		cp.procs = append(cp.procs, p)
	}
	cp.mu.Unlock()
	return p, cp.waitHTTP(ctx, p, spec.client, spec.health)
}

// kill is the forced-exit cleanup: SIGKILL to every process group, and the
// run directory removed if Start created it.
func (cp *ControlPlane) kill() {
	cp.mu.Lock()
	procs := slices.Clone(cp.procs)
	cp.mu.Unlock()
	for _, p := range procs {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	}
	if cp.ownDir {
		_ = os.RemoveAll(cp.dir)
	}
}

// waitHTTP polls url until it answers 200, the process exits or ctx ends.
func (cp *ControlPlane) waitHTTP(ctx context.Context, p *process, client *http.Client, url string) error {
	var last string
	for {
		if p.exited() {
			return p.exitError()
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s within %s (last answer: %s); last lines of %s:\n%s",
				p.name, url, cp.cfg.StartTimeout, last, p.logPath, TailFile(p.logPath, tailLines))
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitBootstrap waits for the default namespace and the RBAC bootstrap
// policy (the node and controller-manager bindings).
func (cp *ControlPlane) waitBootstrap(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(cp.rest)
	if err != nil {
		return fmt.Errorf("admin clientset: %w", err)
	}
	check := func() error {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("namespace default: %w", err)
		}
		if _, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil && cp.hasController("serviceaccount-controller") {
			return fmt.Errorf("service account default/default: %w", err)
		}
		for _, name := range []string{"system:node", "system:kube-controller-manager"} {
			if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("clusterrole %s: %w", name, err)
			}
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:kube-controller-manager", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("clusterrolebinding system:kube-controller-manager: %w", err)
		}
		return nil
	}
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			// Transient API errors are retried like NotFound.
			_ = err
		}
		cp.mu.Lock()
		procs := slices.Clone(cp.procs)
		cp.mu.Unlock()
		for _, p := range procs {
			if p.exited() {
				return p.exitError()
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster bootstrap not complete within %s: %w", cp.cfg.StartTimeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (cp *ControlPlane) hasController(name string) bool {
	for _, c := range cp.cfg.Controllers {
		if cn, _ := canonicalController(c); cn == name || cn == "*" {
			return true
		}
	}
	return false
}

// Died is closed when the plane is dead: a process that ended on its own
// could not be started again, or more processes ended than
// Config.MaxRestarts allows (see Outages for those restarted). Err then
// says which and why.
func (cp *ControlPlane) Died() <-chan struct{} { return cp.died }

// Err returns why the control plane died, or nil.
func (cp *ControlPlane) Err() error {
	select {
	case <-cp.died:
		return cp.diedErr
	default:
		return nil
	}
}

// Stop terminates kube-controller-manager, kube-apiserver and etcd in that
// order (SIGTERM to each process group, SIGKILL after Config.StopTimeout)
// and removes the run directory if Start created it. It is safe to call
// more than once.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		// The forced-exit cleanup stays registered until everything is
		// gone: a second SIGINT during Stop still removes the directory.
		defer func() {
			if cp.unregister != nil {
				cp.unregister()
			}
		}()
		// No restart begins after this; one under way has finished.
		cp.restartMu.Lock()
		close(cp.stopping)
		cp.restartMu.Unlock()
		cp.mu.Lock()
		procs := slices.Clone(cp.procs)
		cp.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(cp.cfg.StopTimeout)
		}
		if cp.ownDir {
			_ = os.RemoveAll(cp.dir)
		}
	})
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
	out := map[string]int{}
	for k, v := range cp.ports {
		out[k] = v
	}
	return out
}

// NodeCredentials returns a kubeconfig for the kubelet identity of node
// name: user system:node:<name> in group system:nodes. With the Node
// authorizer and NodeRestriction it may change only its own Node, its own
// Lease and the pods bound to it.
func (cp *ControlPlane) NodeCredentials(name string) (*Credentials, error) {
	if name == "" {
		return nil, fmt.Errorf("node credentials: node name is empty")
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if c, ok := cp.nodes[name]; ok {
		return &Credentials{Kubeconfig: c.Kubeconfig, RESTConfig: rest.CopyConfig(c.RESTConfig)}, nil
	}
	user := "system:node:" + name
	kp, err := cp.ca.Issue(CertRequest{CommonName: user, Organizations: []string{"system:nodes"}, Client: true})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	path := filepath.Join(cp.dir, "nodes", name+".kubeconfig")
	if err := writeKubeconfig(path, cp.apiURL, user, cp.ca.CertPEM, kp); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	c := &Credentials{Kubeconfig: path, RESTConfig: restConfig(cp.apiURL, cp.ca.CertPEM, kp)}
	cp.nodes[name] = c
	return &Credentials{Kubeconfig: c.Kubeconfig, RESTConfig: rest.CopyConfig(c.RESTConfig)}, nil
}

// ClientCredentials returns a client identity with the given user name and
// groups, e.g. for a subject that must run with exactly its RBAC rules.
func (cp *ControlPlane) ClientCredentials(user string, groups ...string) (*Credentials, error) {
	kp, err := cp.ca.Issue(CertRequest{CommonName: user, Organizations: groups, Client: true})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cp.dir, "nodes", "user-"+sanitize(user)+".kubeconfig")
	if err := writeKubeconfig(path, cp.apiURL, user, cp.ca.CertPEM, kp); err != nil {
		return nil, err
	}
	return &Credentials{Kubeconfig: path, RESTConfig: restConfig(cp.apiURL, cp.ca.CertPEM, kp)}, nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choose a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tlsClient is an HTTPS client trusting caPEM, optionally presenting a
// client certificate.
func tlsClient(caPEM []byte, certFile, keyFile string) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no CA certificate in PEM data")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate %s: %w", certFile, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}
