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
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/internal/shutdown"
	"github.com/bootproof/bootproof/ownership"
)

// maxStartAttempts bounds retries when a chosen port was taken before the
// process bound it.
const maxStartAttempts = 3

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

// start makes one attempt: run directory, ports and PKI, then each
// process in turn, each ready before the next starts, then the cluster's
// bootstrap. On error it stops what it started.
func start(ctx context.Context, cfg Config, bins Binaries) (_ *ControlPlane, retErr error) {
	log := logr.FromContextOrDiscard(ctx).WithName("controlplane")
	cp := &ControlPlane{cfg: cfg, bins: bins, died: make(chan struct{}), stopping: make(chan struct{}),
		nodes: map[string]*Credentials{}}
	if err := cp.setRunDir(); err != nil {
		return nil, err
	}
	// A forced exit (a second SIGINT) kills the processes and removes the
	// directory with the CA key at once.
	cp.unregister = shutdown.Register("embedded control plane "+cp.dir, cp.kill)
	defer func() {
		if retErr != nil {
			cp.Stop()
		}
	}()
	l, err := cp.prepare()
	if err != nil {
		return nil, err
	}
	deadline, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := cp.startEtcd(deadline, log, l); err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(deadline, log, l); err != nil {
		return nil, err
	}
	if err := cp.startControllerManager(deadline, log, l); err != nil {
		return nil, err
	}
	if err := cp.waitBootstrap(deadline); err != nil {
		return nil, err
	}
	go cp.supervise()
	// Start returning is the event a caller reports in its own words (the
	// CLI prints one line with the kubeconfig it wrote); the details are
	// for debugging.
	log.V(1).Info("control plane ready", "apiserver", cp.apiURL, "kubeconfig", cp.kubeconf, "dir", cp.dir,
		"gracePeriod", cfg.GracePeriod, "monitorPeriod", cfg.MonitorPeriod)
	return cp, nil
}

// setRunDir sets the run directory: Config.Dir made absolute, or a new
// temporary directory that Stop removes.
func (cp *ControlPlane) setRunDir() error {
	if cp.cfg.Dir == "" {
		// Named for this process: a run killed before Stop leaves it
		// to the next run's sweep (ownership.SweepTempDirs).
		d, err := ownership.TempDir("controlplane")
		if err != nil {
			return err
		}
		cp.dir, cp.ownDir = d, true
		return nil
	}
	d, err := filepath.Abs(cp.cfg.Dir)
	if err != nil {
		return fmt.Errorf("run directory %s: %w", cp.cfg.Dir, err)
	}
	cp.dir = d
	return nil
}

// prepare creates the run directory's folders, clears etcd's data,
// chooses the ports and writes the PKI.
func (cp *ControlPlane) prepare() (layout, error) {
	for _, sub := range []string{"pki", "logs", "nodes"} {
		if err := os.MkdirAll(filepath.Join(cp.dir, sub), 0o700); err != nil {
			return layout{}, fmt.Errorf("create run directory: %w", err)
		}
	}
	l := newLayout(cp.dir)
	// etcd keeps its data in a fresh directory per start.
	if err := os.RemoveAll(l.etcdData); err != nil {
		return layout{}, fmt.Errorf("clear etcd data: %w", err)
	}
	ports, err := freePorts(4)
	if err != nil {
		return layout{}, err
	}
	l.ports = portSet{etcdClient: ports[0], etcdPeer: ports[1], apiServer: ports[2], controllerManager: ports[3]}
	cp.ports = l.ports
	cp.apiURL = l.apiServerURL()
	cp.kcmURL = l.controllerManagerURL()
	if err := cp.writePKI(l.pki); err != nil {
		return layout{}, err
	}
	return l, nil
}

// startEtcd starts etcd and waits for its health check, which it answers
// only to the API server's etcd client certificate.
func (cp *ControlPlane) startEtcd(ctx context.Context, log logr.Logger, l layout) error {
	etcdURL := l.etcdURL()
	log.V(1).Info("starting process", "process", BinEtcd, "url", etcdURL)
	etcdClient, err := tlsClient(cp.etcdCA.CertPEM, l.pki.apiEtcdClientCert, l.pki.apiEtcdClientKey)
	if err != nil {
		return err
	}
	cp.etcdURL, cp.etcdClient = etcdURL, etcdClient
	_, err = cp.spawnReady(ctx, procSpec{name: BinEtcd, bin: cp.bins.Etcd, args: etcdArgs(l), client: etcdClient, health: etcdURL + "/health"})
	return err
}

// startAPIServer writes the cluster-admin kubeconfig and starts
// kube-apiserver, ready when /readyz answers the admin.
func (cp *ControlPlane) startAPIServer(ctx context.Context, log logr.Logger, l layout) error {
	log.V(1).Info("starting process", "process", BinKubeAPIServer, "url", cp.apiURL)
	admin, err := cp.ca.Issue(CertRequest{CommonName: "bootproof-admin", Organizations: []string{"system:masters"}, Client: true})
	if err != nil {
		return err
	}
	cp.kubeconf = l.adminKubeconfig
	if err := writeKubeconfig(cp.kubeconf, cp.apiURL, "bootproof-admin", cp.ca.CertPEM, admin); err != nil {
		return err
	}
	cp.rest = restConfig(cp.apiURL, cp.ca.CertPEM, admin)
	adminHTTP, err := rest.HTTPClientFor(cp.rest)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	_, err = cp.spawnReady(ctx, procSpec{name: BinKubeAPIServer, bin: cp.bins.KubeAPIServer, args: apiServerArgs(l), client: adminHTTP, health: cp.apiURL + "/readyz"})
	return err
}

// startControllerManager writes kube-controller-manager's kubeconfig and
// starts it, ready when /healthz answers.
func (cp *ControlPlane) startControllerManager(ctx context.Context, log logr.Logger, l layout) error {
	kcmClient, err := cp.ca.Issue(CertRequest{CommonName: "system:kube-controller-manager", Client: true})
	if err != nil {
		return err
	}
	if err := writeKubeconfig(l.kcmKubeconfig, cp.apiURL, "system:kube-controller-manager", cp.ca.CertPEM, kcmClient); err != nil {
		return err
	}
	log.V(1).Info("starting process", "process", BinKubeControllerManager, "url", cp.kcmURL)
	kcmHTTP, err := tlsClient(cp.ca.CertPEM, "", "")
	if err != nil {
		return err
	}
	_, err = cp.spawnReady(ctx, procSpec{name: BinKubeControllerManager, bin: cp.bins.KubeControllerManager,
		args: controllerManagerArgs(cp.cfg, l), client: kcmHTTP, health: cp.kcmURL + "/healthz"})
	return err
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
