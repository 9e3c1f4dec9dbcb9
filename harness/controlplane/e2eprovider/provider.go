package e2eprovider

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/harness/controlplane"
)

// DefaultName is the cluster name when none is given.
const DefaultName = "bootproof"

// Provider is an e2e-framework cluster provider backed by an embedded
// control plane. Create starts it, Destroy stops it.
type Provider struct {
	name    string
	version string
	cfg     controlplane.Config
	cp      *controlplane.ControlPlane
}

var _ support.E2EClusterProvider = (*Provider)(nil)

// New returns a provider that starts a control plane configured by cfg.
func New(cfg controlplane.Config) *Provider { return &Provider{cfg: cfg} }

// WithConfig returns a ClusterOpts that edits the control-plane Config of a
// bootproof provider; on any other provider it does nothing.
func WithConfig(edit func(*controlplane.Config)) support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			edit(&p.cfg)
		}
	}
}

// WithGracePeriod sets kube-controller-manager's --node-monitor-grace-period.
func WithGracePeriod(d time.Duration) support.ClusterOpts {
	return WithConfig(func(c *controlplane.Config) { c.GracePeriod = d })
}

// SetDefaults names the cluster DefaultName when it has no name.
func (p *Provider) SetDefaults() support.E2EClusterProvider {
	if p.name == "" {
		p.name = DefaultName
	}
	return p
}

// WithName sets the cluster name (used for the kubeconfig context only).
func (p *Provider) WithName(name string) support.E2EClusterProvider {
	p.name = name
	return p
}

// WithVersion requires the binaries to report this Kubernetes version
// (e.g. "v1.37.2"); Create fails otherwise.
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	p.version = version
	return p
}

// WithPath sets the directory holding the control-plane binaries; a path to
// one of the binaries means its directory.
func (p *Provider) WithPath(path string) support.E2EClusterProvider {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		path = filepath.Dir(path)
	}
	p.cfg.BinDir = path
	return p
}

// WithOpts applies opts to the provider.
func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// Create starts the control plane and returns the admin kubeconfig path.
// The embedded cluster takes no creation arguments.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	if len(args) > 0 {
		return "", fmt.Errorf("create embedded cluster %q: unexpected arguments %q: the embedded provider is configured with New and WithOpts only", p.name, args)
	}
	if p.cp != nil {
		return "", fmt.Errorf("create embedded cluster %q: already created", p.name)
	}
	if p.version != "" {
		if err := p.checkVersion(); err != nil {
			return "", err
		}
	}
	cp, err := controlplane.Start(ctx, p.cfg)
	if err != nil {
		return "", fmt.Errorf("create embedded cluster %q: %w", p.name, err)
	}
	p.cp = cp
	return cp.Kubeconfig(), nil
}

// FileConfig is the YAML form CreateWithConfig reads.
type FileConfig struct {
	GracePeriod   string   `json:"gracePeriod,omitempty"`
	MonitorPeriod string   `json:"monitorPeriod,omitempty"`
	Controllers   []string `json:"controllers,omitempty"`
	BinDir        string   `json:"binDir,omitempty"`
	Dir           string   `json:"dir,omitempty"`
}

// CreateWithConfig reads a YAML FileConfig, applies it over the provider's
// Config and creates the cluster.
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return "", fmt.Errorf("read cluster config: %w", err)
	}
	var fc FileConfig
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return "", fmt.Errorf("cluster config %s: %w (accepted fields: gracePeriod, monitorPeriod, controllers, binDir, dir)", configFile, err)
	}
	for _, d := range []struct {
		field string
		val   string
		dst   *time.Duration
	}{{"gracePeriod", fc.GracePeriod, &p.cfg.GracePeriod}, {"monitorPeriod", fc.MonitorPeriod, &p.cfg.MonitorPeriod}} {
		if d.val == "" {
			continue
		}
		v, err := time.ParseDuration(d.val)
		if err != nil {
			return "", fmt.Errorf("cluster config %s: field %s: %q is not a duration (e.g. 8s)", configFile, d.field, d.val)
		}
		*d.dst = v
	}
	if len(fc.Controllers) > 0 {
		p.cfg.Controllers = fc.Controllers
	}
	if fc.BinDir != "" {
		p.cfg.BinDir = fc.BinDir
	}
	if fc.Dir != "" {
		p.cfg.Dir = fc.Dir
	}
	return p.Create(ctx)
}

func (p *Provider) checkVersion() error {
	bins, err := controlplane.FindBinaries(p.cfg.BinDir)
	if err != nil {
		return err
	}
	out, err := exec.Command(bins.KubeAPIServer, "--version").Output()
	if err != nil {
		return fmt.Errorf("kube-apiserver --version: %w", err)
	}
	got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes"))
	if got != p.version {
		return fmt.Errorf("embedded cluster %q: binaries in %s are Kubernetes %s, not the requested %s", p.name, filepath.Dir(bins.KubeAPIServer), got, p.version)
	}
	return nil
}

// ControlPlane returns the running control plane, or nil before Create.
func (p *Provider) ControlPlane() *controlplane.ControlPlane { return p.cp }

// GetKubeconfig returns the admin kubeconfig path, or "" before Create.
func (p *Provider) GetKubeconfig() string {
	if p.cp == nil {
		return ""
	}
	return p.cp.Kubeconfig()
}

// GenerateKubeconfig returns the admin kubeconfig path; the embedded
// cluster writes it once at start.
func (p *Provider) GenerateKubeconfig(...string) (string, error) {
	if p.cp == nil {
		return "", fmt.Errorf("embedded cluster %q: not created", p.name)
	}
	return p.cp.Kubeconfig(), nil
}

// GetKubectlContext returns the context name in the kubeconfig.
func (p *Provider) GetKubectlContext() string { return "bootproof" }

// ExportLogs copies the etcd, kube-apiserver and kube-controller-manager
// logs into dest.
func (p *Provider) ExportLogs(_ context.Context, dest string) error {
	if p.cp == nil {
		return fmt.Errorf("embedded cluster %q: not created", p.name)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("export logs: %w", err)
	}
	logs, _ := filepath.Glob(filepath.Join(p.cp.Dir(), "logs", "*.log"))
	for _, l := range logs {
		if err := copyFile(l, filepath.Join(dest, filepath.Base(l))); err != nil {
			return fmt.Errorf("export logs: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Destroy stops every process of the cluster.
func (p *Provider) Destroy(context.Context) error {
	if p.cp == nil {
		return nil
	}
	p.cp.Stop()
	p.cp = nil
	return nil
}

// WaitForControlPlane checks that the API answers through client; Create
// has already waited for readiness.
func (p *Provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	if p.cp == nil {
		return fmt.Errorf("embedded cluster %q: not created", p.name)
	}
	var ns corev1.NamespaceList
	if err := client.Resources().List(ctx, &ns); err != nil {
		return fmt.Errorf("embedded cluster %q: list namespaces: %w", p.name, err)
	}
	if len(ns.Items) == 0 {
		return fmt.Errorf("embedded cluster %q: no namespaces yet", p.name)
	}
	return nil
}

// KubernetesRestConfig returns the admin client configuration.
func (p *Provider) KubernetesRestConfig() *rest.Config {
	if p.cp == nil {
		return nil
	}
	return p.cp.RESTConfig()
}
