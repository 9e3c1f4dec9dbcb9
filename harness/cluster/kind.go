package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/ownership"
)

// DefaultKindImage is the kind node image bootproof pins: Kubernetes
// v1.37.0, the node image sigs.k8s.io/kind v0.33.0 is released with.
const DefaultKindImage = "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"

// KindConfig configures a kind cluster.
type KindConfig struct {
	// Name of the cluster; default KindOwnedName() (a retained cluster:
	// "bootproof").
	Name string
	// Image is the node image; default DefaultKindImage.
	Image string
	// GracePeriod and MonitorPeriod go to kube-controller-manager.
	GracePeriod   time.Duration
	MonitorPeriod time.Duration
	// Reuse takes an existing cluster of this name instead of creating
	// one; it is never deleted.
	Reuse bool
	// Retain keeps a created cluster at the end.
	Retain bool
	// LogDir receives the cluster's logs when Stop is told the run failed.
	LogDir string
	// WaitForReady bounds the wait for the control plane; default 5m.
	WaitForReady time.Duration
}

func (c KindConfig) defaults() KindConfig {
	switch {
	case c.Name != "":
	case c.Retain:
		c.Name = "bootproof" // kept on purpose: never swept
	default:
		c.Name = KindOwnedName()
	}
	if c.Image == "" {
		c.Image = DefaultKindImage
	}
	if c.GracePeriod == 0 {
		c.GracePeriod = 10 * time.Second
	}
	if c.MonitorPeriod == 0 {
		c.MonitorPeriod = time.Second
	}
	if c.WaitForReady == 0 {
		c.WaitForReady = 5 * time.Minute
	}
	return c
}

// kubeadm v1beta4 (Kubernetes 1.31+) takes extraArgs as a list.
type kubeadmArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type kubeadmClusterConfiguration struct {
	Kind              string `json:"kind"`
	ControllerManager struct {
		ExtraArgs []kubeadmArg `json:"extraArgs"`
	} `json:"controllerManager"`
}

type kindNode struct {
	Role  string `json:"role"`
	Image string `json:"image"`
}

type kindClusterConfig struct {
	Kind                 string     `json:"kind"`
	APIVersion           string     `json:"apiVersion"`
	Name                 string     `json:"name"`
	Nodes                []kindNode `json:"nodes"`
	KubeadmConfigPatches []string   `json:"kubeadmConfigPatches"`
}

// KindClusterConfig renders the kind cluster configuration: one
// control-plane node of the pinned image, and a kubeadm patch that sets
// kube-controller-manager's grace and monitor periods.
func KindClusterConfig(cfg KindConfig) ([]byte, error) {
	cfg = cfg.defaults()
	var kc kubeadmClusterConfiguration
	kc.Kind = "ClusterConfiguration"
	kc.ControllerManager.ExtraArgs = []kubeadmArg{
		{Name: "node-monitor-grace-period", Value: cfg.GracePeriod.String()},
		{Name: "node-monitor-period", Value: cfg.MonitorPeriod.String()},
	}
	patch, err := yaml.Marshal(kc)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(kindClusterConfig{
		Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4", Name: cfg.Name,
		Nodes:                []kindNode{{Role: "control-plane", Image: cfg.Image}},
		KubeadmConfigPatches: []string{string(patch)},
	})
}

// ErrNoContainerEngine is returned by KindPreflight when neither docker
// nor podman answers.
var ErrNoContainerEngine = errors.New("kind needs a container engine, and neither docker nor podman is reachable here; 'make test' and 'bootproof run --cluster embedded' run the catalog without one")

// KindPreflight checks that a container engine answers (docker info, then
// podman info).
func KindPreflight(ctx context.Context) error {
	var tried []string
	for _, engine := range []string{"docker", "podman"} {
		path, err := exec.LookPath(engine)
		if err != nil {
			tried = append(tried, engine+": not installed")
			continue
		}
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(c, path, "info", "--format", "{{.ServerVersion}}").CombinedOutput()
		cancel()
		if err == nil {
			return nil
		}
		tried = append(tried, fmt.Sprintf("%s info: %v: %s", engine, err, firstLine(out)))
	}
	return fmt.Errorf("%w (%v)", ErrNoContainerEngine, tried)
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// Kind is a kind cluster (created here, or reused by name) with simulated
// nodes joining its API server as system:node identities issued through
// CSRs.
type Kind struct {
	*CSRIssuer
	cfg        KindConfig
	provider   *kindcluster.Provider
	kubeconfig string
	rc         *rest.Config
	created    bool
}

// StartKind creates (or reuses) the cluster and waits until it is ready.
// The kubeconfig goes to a 0600 temporary file, never into ~/.kube/config.
func StartKind(ctx context.Context, cfg KindConfig) (_ *Kind, retErr error) {
	cfg = cfg.defaults()
	if err := KindPreflight(ctx); err != nil {
		return nil, err
	}
	provider := kindcluster.NewProvider()
	// The kubeconfig's directory is named for this process: swept if it
	// is killed (ownership.SweepTempDirs), as is the cluster (SweepKind).
	dir, err := ownership.TempDir("kind")
	if err != nil {
		return nil, err
	}
	k := &Kind{cfg: cfg, provider: provider, kubeconfig: filepath.Join(dir, "kubeconfig")}
	defer func() {
		if retErr != nil {
			if err := k.Stop(true); err != nil {
				retErr = errors.Join(retErr, fmt.Errorf("clean up after a failed start: %w", err))
			}
		}
	}()
	existing, err := provider.List()
	if err != nil {
		return nil, fmt.Errorf("list kind clusters: %w", err)
	}
	switch {
	case cfg.Reuse:
		if !slices.Contains(existing, cfg.Name) {
			return nil, &contract.InputError{Field: field.NewPath("KindCluster"), Value: cfg.Name, Reason: fmt.Sprintf("no such kind cluster (have %v)", existing)}
		}
	case slices.Contains(existing, cfg.Name):
		return nil, &contract.InputError{Field: field.NewPath("KindCluster"), Reason: fmt.Sprintf("a kind cluster named %s exists already: reuse it (give its name here) or delete it with 'kind delete cluster --name %s'", cfg.Name, cfg.Name)}
	default:
		raw, err := KindClusterConfig(cfg)
		if err != nil {
			return nil, err
		}
		if err := provider.Create(cfg.Name, kindcluster.CreateWithRawConfig(raw), kindcluster.CreateWithWaitForReady(cfg.WaitForReady),
			kindcluster.CreateWithKubeconfigPath(k.kubeconfig), kindcluster.CreateWithDisplayUsage(false), kindcluster.CreateWithDisplaySalutation(false)); err != nil {
			return nil, fmt.Errorf("create kind cluster %s: %w", cfg.Name, err)
		}
		k.created = true
	}
	raw, err := provider.KubeConfig(cfg.Name, false)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of kind cluster %s: %w", cfg.Name, err)
	}
	if err := os.WriteFile(k.kubeconfig, []byte(raw), 0o600); err != nil {
		return nil, err
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of kind cluster %s: %w", cfg.Name, err)
	}
	rc.QPS, rc.Burst = 200, 400
	k.rc = rc
	k.CSRIssuer = &CSRIssuer{Admin: rc}
	return k, nil
}

// Name implements scenarios.Cluster.
func (k *Kind) Name() string { return "kind" }

// RESTConfig implements scenarios.Cluster.
func (k *Kind) RESTConfig() *rest.Config { return rest.CopyConfig(k.rc) }

// GracePeriod implements scenarios.Cluster.
func (k *Kind) GracePeriod() time.Duration { return k.cfg.GracePeriod }

// Kubeconfig is the path of the cluster's 0600 kubeconfig file.
func (k *Kind) Kubeconfig() string { return k.kubeconfig }

// Stop exports the logs when failed and LogDir is set, deletes a cluster
// it created unless Retain, and removes the kubeconfig file.
func (k *Kind) Stop(failed bool) error {
	var errs []error
	if failed && k.cfg.LogDir != "" {
		if err := k.provider.CollectLogs(k.cfg.Name, filepath.Join(k.cfg.LogDir, "kind-logs")); err != nil {
			errs = append(errs, fmt.Errorf("export kind logs: %w", err))
		}
	}
	if k.created && !k.cfg.Retain {
		if err := k.provider.Delete(k.cfg.Name, k.kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("delete kind cluster %s: %w", k.cfg.Name, err))
		}
	}
	_ = os.RemoveAll(filepath.Dir(k.kubeconfig))
	return errors.Join(errs...)
}

// KindOwnedName is the name of a kind cluster this process creates:
// bootproof-<pid>-<start ticks>, so SweepKind can tell when its run is
// gone.
func KindOwnedName() string {
	o := ownership.Self()
	return fmt.Sprintf("bootproof-%d-%d", o.PID, o.Start)
}

var kindOwnedName = regexp.MustCompile(`^bootproof-([0-9]+)-([0-9]+)$`)

// KindClusters is the part of kind's cluster.Provider SweepKind uses.
type KindClusters interface {
	List() ([]string, error)
	Delete(name, explicitKubeconfigPath string) error
}

// SweepKind deletes the kind clusters that runs created and could not
// delete because they were killed (KindOwnedName, owner gone) and
// returns their names; with dryRun it only returns them. Clusters of
// live runs, retained ones and everyone else's stay.
func SweepKind(p KindClusters, dryRun bool) ([]string, error) {
	names, err := p.List()
	if err != nil {
		return nil, fmt.Errorf("list kind clusters: %w", err)
	}
	var removed []string
	var errs []error
	for _, n := range names {
		m := kindOwnedName.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		o, err := ownership.ParseOwner(m[1] + "/" + m[2])
		if err != nil || o.Alive() {
			continue
		}
		if dryRun {
			removed = append(removed, n)
			continue
		}
		if err := p.Delete(n, ""); err != nil {
			errs = append(errs, fmt.Errorf("delete kind cluster %s of a dead run: %w", n, err))
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

// SweepKindClusters runs SweepKind with kind's own provider, when a
// container engine answers (nil, nil when none does: there can be no
// kind cluster).
func SweepKindClusters(ctx context.Context, dryRun bool) ([]string, error) {
	if KindPreflight(ctx) != nil {
		return nil, nil
	}
	return SweepKind(kindcluster.NewProvider(), dryRun)
}
