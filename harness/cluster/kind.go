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
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindnodes "sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/internal/kindhost"
	"github.com/bootproof/bootproof/internal/kindimage"
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
	// SkipPhases are kubeadm init phases to skip besides kind's own
	// preflight: the addons the node image has no image for. StartKind
	// takes them from a local node image's kindimage.LabelSkipPhases label
	// (bootproof's node image leaves out CoreDNS); none for kind's
	// published images.
	SkipPhases []string
	// EtcdImageTag is the tag of the etcd image kubeadm runs, where the
	// node image's is not the one kubeadm asks for. StartKind takes it from
	// a local node image's kindimage.LabelEtcdImageTag label (bootproof's
	// node image carries the embedded plane's etcd); empty: kubeadm's.
	EtcdImageTag string
	// ImageArchives are image archives (docker save format) loaded into
	// every node of the cluster after it starts, as 'kind load
	// image-archive' does: images built here for Deployments that run
	// with imagePullPolicy: Never.
	ImageArchives []string
	// CgroupV1 tells the kubelet to run on a cgroup v1 host, which
	// Kubernetes 1.35+ refuses by default (failCgroupV1); default: true
	// where /sys/fs/cgroup is cgroup v1.
	CgroupV1 *bool
	// RestrictOOMScoreAdj makes the node's containerd clamp the pods' OOM
	// score adjustments to its own (restrict_oom_score_adj), as in a user
	// namespace: lowering one needs CAP_SYS_RESOURCE, which the node
	// container lacks when the host's root does. Default: true where this
	// process's bounding set lacks CAP_SYS_RESOURCE.
	RestrictOOMScoreAdj *bool
}

// HostLacksSysResource reports whether this process's bounding set lacks
// CAP_SYS_RESOURCE, so no container started from here can have it.
func HostLacksSysResource() bool {
	missing, err := kindhost.MissingCapabilities()
	return err == nil && slices.Contains(missing, "CAP_SYS_RESOURCE")
}

// HostCgroupV1 reports whether this host mounts cgroup v1 (no unified
// hierarchy at /sys/fs/cgroup).
func HostCgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
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
	if c.CgroupV1 == nil {
		v1 := HostCgroupV1()
		c.CgroupV1 = &v1
	}
	if c.RestrictOOMScoreAdj == nil {
		r := HostLacksSysResource()
		c.RestrictOOMScoreAdj = &r
	}
	return c
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
	// engine and network: the container engine, and kind's network when
	// this run created it (removed at Stop once no container is on it).
	engine, network string
	// createTook is how long the cluster took to be ready (0 if reused).
	createTook time.Duration
}

// Issuer returns the CSRIssuer the kind cluster's nodes get their
// identities from (so that IssuerOf gives the issuer itself, whose
// Labels a run sets, not the cluster).
func (k *Kind) Issuer() CredentialIssuer {
	if k.CSRIssuer == nil {
		return nil
	}
	return k.CSRIssuer
}

// StartKind creates (or reuses) the cluster and waits until it is ready.
// The kubeconfig goes to a 0600 temporary file, never into ~/.kube/config.
func StartKind(ctx context.Context, cfg KindConfig) (_ *Kind, retErr error) {
	cfg = cfg.defaults()
	for _, a := range cfg.ImageArchives {
		if st, err := os.Stat(a); err != nil || !st.Mode().IsRegular() {
			return nil, &contract.InputError{Field: field.NewPath("KindImageArchives"), Value: a, Reason: "accepted: an image archive file (docker save format), e.g. from 'bootproof kind build-operator-image'"}
		}
	}
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
		if err := KindImagePreflight(ctx, cfg.Image); err != nil {
			return nil, err
		}
		if k.engine, err = kindEngine(ctx); err != nil {
			return nil, err
		}
		if cfg.SkipPhases == nil {
			cfg.SkipPhases = imageSkipPhases(ctx, k.engine, cfg.Image)
		}
		if cfg.EtcdImageTag == "" {
			cfg.EtcdImageTag = imageLabel(ctx, k.engine, cfg.Image, kindimage.LabelEtcdImageTag)
		}
		if exec.CommandContext(ctx, k.engine, "network", "inspect", kindNetwork).Run() != nil {
			k.network = kindNetwork
		}
		raw, err := KindClusterConfig(cfg)
		if err != nil {
			return nil, err
		}
		createStart := time.Now()
		if err := provider.Create(cfg.Name, kindcluster.CreateWithRawConfig(raw), kindcluster.CreateWithWaitForReady(cfg.WaitForReady),
			kindcluster.CreateWithKubeconfigPath(k.kubeconfig), kindcluster.CreateWithDisplayUsage(false), kindcluster.CreateWithDisplaySalutation(false),
			kindcluster.CreateWithRetain(cfg.Retain)); err != nil {
			return nil, fmt.Errorf("create kind cluster %s: %w", cfg.Name, err)
		}
		k.created = true
		k.createTook = time.Since(createStart)
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
	if err := k.loadArchives(); err != nil {
		return nil, err
	}
	return k, nil
}

// loadArchives loads cfg.ImageArchives into every node of the cluster.
func (k *Kind) loadArchives() error {
	if len(k.cfg.ImageArchives) == 0 {
		return nil
	}
	nodes, err := k.provider.ListInternalNodes(k.cfg.Name)
	if err != nil {
		return fmt.Errorf("nodes of kind cluster %s: %w", k.cfg.Name, err)
	}
	for _, path := range k.cfg.ImageArchives {
		for _, n := range nodes {
			if err := loadArchive(n, path); err != nil {
				return fmt.Errorf("load image archive %s into kind node %s: %w", path, n.String(), err)
			}
		}
	}
	return nil
}

func loadArchive(n kindnodes.Node, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return nodeutils.LoadImageArchive(n, f)
}

// Name implements scenarios.Cluster.
func (k *Kind) Name() string { return "kind" }

// RESTConfig implements scenarios.Cluster.
func (k *Kind) RESTConfig() *rest.Config { return rest.CopyConfig(k.rc) }

// GracePeriod implements scenarios.Cluster.
func (k *Kind) GracePeriod() time.Duration { return k.cfg.GracePeriod }

// Environment describes the cluster for a run's report: the node image,
// how long the cluster took to create, and its node's memory now (the
// node container's working set: usage less inactive file pages, as
// docker stats and the kubelet count it).
func (k *Kind) Environment(ctx context.Context) map[string]string {
	env := map[string]string{"kind-image": k.cfg.Image}
	if k.createTook > 0 {
		env["kind-cluster-created-in"] = k.createTook.Round(100 * time.Millisecond).String()
	}
	if k.engine != "" {
		if mib, err := nodeWorkingSetMiB(ctx, k.engine, k.cfg.Name+"-control-plane"); err == nil {
			env["kind-node-memory"] = fmt.Sprintf("%.0f MiB", mib)
		}
	}
	return env
}

// nodeWorkingSetMiB reads the node container's own cgroup (kind runs its
// nodes in a private cgroup namespace): v2's memory.current or v1's
// memory.usage_in_bytes, less inactive file pages.
func nodeWorkingSetMiB(ctx context.Context, engine, container string) (float64, error) {
	script := `if [ -f /sys/fs/cgroup/memory.current ]; then
  echo "$(cat /sys/fs/cgroup/memory.current) $(awk '$1 == "inactive_file" {print $2}' /sys/fs/cgroup/memory.stat)"
else
  echo "$(cat /sys/fs/cgroup/memory/memory.usage_in_bytes) $(awk '$1 == "total_inactive_file" {print $2}' /sys/fs/cgroup/memory/memory.stat)"
fi`
	out, err := exec.CommandContext(ctx, engine, "exec", container, "sh", "-c", script).Output()
	if err != nil {
		return 0, err
	}
	var usage, inactive float64
	if _, err := fmt.Sscan(string(out), &usage, &inactive); err != nil {
		return 0, fmt.Errorf("memory of %s: %q: %w", container, out, err)
	}
	return (usage - inactive) / (1 << 20), nil
}

// ClusterName is the kind cluster's name.
func (k *Kind) ClusterName() string { return k.cfg.Name }

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
		// kind leaves its network behind; one this run created goes,
		// unless another cluster uses it by now (the engine refuses).
		if k.network != "" {
			_ = exec.Command(k.engine, "network", "rm", k.network).Run()
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
//
// Once it deleted a cluster it also removes kind's network if no
// container is left on it (kind makes it again for the next cluster): a
// killed run that created it cannot.
func SweepKindClusters(ctx context.Context, dryRun bool) ([]string, error) {
	engine, err := kindEngine(ctx)
	if err != nil {
		return nil, nil
	}
	removed, err := SweepKind(kindcluster.NewProvider(), dryRun)
	if len(removed) > 0 && !dryRun {
		_ = exec.CommandContext(ctx, engine, "network", "rm", kindNetwork).Run() // refused while in use
	}
	return removed, err
}

// imageSkipPhases reads the kubeadm phases a node image asks to skip
// (kindimage.LabelSkipPhases); none when it has no such label.
func imageSkipPhases(ctx context.Context, engine, image string) []string {
	var phases []string
	for _, p := range strings.Split(imageLabel(ctx, engine, image, kindimage.LabelSkipPhases), ",") {
		if p = strings.TrimSpace(p); p != "" {
			phases = append(phases, p)
		}
	}
	return phases
}

// imageLabel reads a local image's label; empty when the image or the
// label is missing.
func imageLabel(ctx context.Context, engine, image, label string) string {
	out, err := exec.CommandContext(ctx, engine, "image", "inspect", "--format",
		`{{ index .Config.Labels "`+label+`" }}`, image).Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "<no value>" {
		return v
	}
	return ""
}
