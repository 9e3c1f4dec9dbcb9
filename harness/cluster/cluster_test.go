package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/ownership"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/internal/kindhost"
	"github.com/bootproof/bootproof/internal/kindimage"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestKindClusterConfigGolden(t *testing.T) {
	v1, restrict := false, false
	// bootproof's node image asks to skip the addons it lacks
	// (kindimage.LabelSkipPhases).
	got, err := KindClusterConfig(KindConfig{Name: "bootproof", GracePeriod: 10 * time.Second, MonitorPeriod: time.Second, CgroupV1: &v1, RestrictOOMScoreAdj: &restrict,
		SkipPhases: kindimage.SkipPhases(), EtcdImageTag: kindimage.EtcdImageTag("3.6.16")})
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/kind-config.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("kind config differs from %s:\n%s", golden, got)
	}
	// kind's own v1alpha4 types take it strictly.
	var kc v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(got, &kc); err != nil {
		t.Errorf("kind v1alpha4 rejects the config: %v", err)
	}
	if len(kc.Nodes) != 1 || kc.Nodes[0].Role != v1alpha4.ControlPlaneRole || len(kc.KubeadmConfigPatches) != 2 {
		t.Fatalf("decoded config: %+v", kc)
	}
	// kubeadm init skips kind's preflight and the addons the node image
	// leaves out (a merge patch replaces kind's list whole).
	var initCfg struct {
		Kind       string   `json:"kind"`
		SkipPhases []string `json:"skipPhases"`
	}
	if err := yaml.UnmarshalStrict([]byte(kc.KubeadmConfigPatches[1]), &initCfg); err != nil {
		t.Fatal(err)
	}
	if wantPhases := []string{"preflight", "addon/coredns"}; initCfg.Kind != "InitConfiguration" || !slices.Equal(initCfg.SkipPhases, wantPhases) {
		t.Errorf("init patch %+v, want InitConfiguration skipping %v", initCfg, wantPhases)
	}
	// kubeadm runs the node image's etcd (the embedded plane's, named by
	// its label), with kind's other etcd settings kept by the merge.
	var clusterCfg struct {
		Etcd struct {
			Local struct {
				ImageTag string `json:"imageTag"`
			} `json:"local"`
		} `json:"etcd"`
	}
	if err := yaml.Unmarshal([]byte(kc.KubeadmConfigPatches[0]), &clusterCfg); err != nil || clusterCfg.Etcd.Local.ImageTag != "3.6.16-0" {
		t.Errorf("etcd image tag %q (%v), want 3.6.16-0", clusterCfg.Etcd.Local.ImageTag, err)
	}
	// An image that asks to skip nothing (kind's published ones) keeps
	// kind's init configuration: no patch.
	plain, err := KindClusterConfig(KindConfig{Name: "bootproof", CgroupV1: &v1, RestrictOOMScoreAdj: &restrict})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "InitConfiguration") || strings.Contains(string(plain), "skipPhases") {
		t.Errorf("a node image with every addon gets a skipPhases patch:\n%s", plain)
	}
	if strings.Contains(string(plain), "imageTag") {
		t.Errorf("a node image with kubeadm's etcd gets an etcd image tag:\n%s", plain)
	}
	for _, s := range []string{"name: node-monitor-grace-period", "value: 10s", "name: node-monitor-period", "value: 1s", "kind: ClusterConfiguration", DefaultKindImage} {
		if !strings.Contains(string(got), s) {
			t.Errorf("config lacks %q", s)
		}
	}
	if strings.Contains(string(got), "failCgroupV1") || strings.Contains(string(got), "restrict_oom_score_adj") {
		t.Error("a cgroup v2 host with every capability gets the patches of a restricted host")
	}
	// On a cgroup v1 host the kubelet (1.35+) must be told it may run;
	// without CAP_SYS_RESOURCE, containerd must not lower OOM scores.
	v1, restrict = true, true
	got, err = KindClusterConfig(KindConfig{Name: "bootproof", CgroupV1: &v1, RestrictOOMScoreAdj: &restrict})
	if err != nil {
		t.Fatal(err)
	}
	kc = v1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(got, &kc); err != nil || len(kc.KubeadmConfigPatches) != 2 {
		t.Fatalf("cgroup v1 config: %v\n%s", err, got)
	}
	var kubelet map[string]any
	if err := yaml.Unmarshal([]byte(kc.KubeadmConfigPatches[1]), &kubelet); err != nil {
		t.Fatal(err)
	}
	if kubelet["kind"] != "KubeletConfiguration" || kubelet["apiVersion"] != "kubelet.config.k8s.io/v1beta1" || kubelet["failCgroupV1"] != false {
		t.Errorf("kubelet patch on cgroup v1: %v", kubelet)
	}
	if len(kc.ContainerdConfigPatches) != 1 || !strings.Contains(kc.ContainerdConfigPatches[0], "restrict_oom_score_adj = true") {
		t.Errorf("containerd patches without CAP_SYS_RESOURCE: %v", kc.ContainerdConfigPatches)
	}
}

// TestKindPreflightWithoutEngine: where no container engine is found
// (PATH holds none here), the preflight must say so.
func TestKindPreflightWithoutEngine(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := KindPreflight(context.Background())
	if !errors.Is(err, ErrNoContainerEngine) || !strings.Contains(err.Error(), "make test") {
		t.Errorf("KindPreflight = %v", err)
	}
}

func TestGraceFromArgs(t *testing.T) {
	tests := []struct {
		args []string
		want time.Duration
		ok   bool
		err  bool
	}{
		{[]string{"kube-controller-manager", "--node-monitor-grace-period=40s"}, 40 * time.Second, true, false},
		{[]string{"--v=2", "--node-monitor-grace-period", "12s"}, 12 * time.Second, true, false},
		{[]string{"kube-controller-manager", "--node-monitor-period=5s"}, 0, false, false},
		{[]string{"--node-monitor-grace-period=soon"}, 0, true, true},
	}
	for _, tc := range tests {
		d, ok, err := graceFromArgs(tc.args)
		if d != tc.want || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("graceFromArgs(%v) = %s, %v, %v", tc.args, d, ok, err)
		}
	}
}

// fakeKind is a kind provider's cluster list.
type fakeKind struct {
	names   []string
	deleted []string
}

func (f *fakeKind) List() ([]string, error) { return f.names, nil }
func (f *fakeKind) Delete(name, _ string) error {
	f.deleted = append(f.deleted, name)
	return nil
}

// SweepKind deletes only the clusters of runs that are gone.
func TestSweepKind(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	self := ownership.Self()
	mine := KindOwnedName()
	dead := fmt.Sprintf("bootproof-%d-%d", c.Process.Pid, 12345)
	reused := fmt.Sprintf("bootproof-%d-%d", self.PID, self.Start+1)
	f := &fakeKind{names: []string{"kind", "bootproof", mine, dead, reused, "bootproof-1-x"}}
	listed, err := SweepKind(f, true)
	if err != nil || len(listed) != 2 || len(f.deleted) != 0 {
		t.Fatalf("dry run: listed %v, deleted %v, %v", listed, f.deleted, err)
	}
	removed, err := SweepKind(f, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{dead, reused}; !slices.Equal(removed, want) || !slices.Equal(f.deleted, want) {
		t.Errorf("removed %v, deleted %v; want %v", removed, f.deleted, want)
	}
	if got := (KindConfig{}).defaults().Name; got != mine {
		t.Errorf("default name %q, want %q", got, mine)
	}
	if got := (KindConfig{Retain: true}).defaults().Name; got != "bootproof" {
		t.Errorf("retained cluster's default name %q", got)
	}
}

// fakeEngine puts a docker on PATH that answers info and image inspect
// as told and fails 'run' as runc does on a host without a capability.
func fakeEngine(t *testing.T, haveImage, runOK bool) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
case "$1" in
  info) echo 20.10.24; exit 0 ;;
  image) ` + map[bool]string{true: "exit 0", false: "echo 'Error: No such image' >&2; exit 1"}[haveImage] + ` ;;
  pull) echo 'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host' >&2; exit 1 ;;
  run) ` + map[bool]string{true: "exit 0", false: "echo 'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown.' >&2; exit 126"}[runOK] + ` ;;
esac
exit 3
`
	if err := os.WriteFile(dir+"/docker", []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestKindImagePreflight(t *testing.T) {
	ctx := context.Background()
	t.Setenv("PATH", t.TempDir()) // no engine at all
	if err := KindImagePreflight(ctx, DefaultKindImage); !errors.Is(err, ErrNoContainerEngine) || !strings.Contains(err.Error(), "docker: not installed") {
		t.Errorf("no engine: %v", err)
	}
	fakeEngine(t, false, true)
	err := KindImagePreflight(ctx, LocalKindImagePrefix+"v1.37.2-0123456789ab")
	if !errors.Is(err, ErrKindImageMissing) || !strings.Contains(err.Error(), "make kind-image") {
		t.Errorf("local image missing: %v", err)
	}
	err = KindImagePreflight(ctx, DefaultKindImage)
	if !errors.Is(err, ErrKindImageMissing) || !strings.Contains(err.Error(), "could not be pulled") || !strings.Contains(err.Error(), "make kind-image") {
		t.Errorf("published image not pullable: %v", err)
	}
	fakeEngine(t, true, false)
	err = KindImagePreflight(ctx, LocalKindImagePrefix+"v1.37.2-0123456789ab")
	if !errors.Is(err, ErrPrivilegedRefused) || !strings.Contains(err.Error(), "unable to apply caps") {
		t.Errorf("privileged refused: %v", err)
	}
	if missing, _ := kindhost.MissingCapabilities(); len(missing) > 0 {
		for _, m := range missing {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("the error does not name %s, which this host lacks: %v", m, err)
			}
		}
		if !strings.Contains(err.Error(), "make deps-kind") {
			t.Errorf("the error does not name the fix: %v", err)
		}
	}
	fakeEngine(t, true, true)
	if err := KindImagePreflight(ctx, LocalKindImagePrefix+"v1.37.2-0123456789ab"); err != nil {
		t.Errorf("image present, privileged containers run: %v", err)
	}
}

// TestIssuerOfKind: a kind cluster's issuer is its CSRIssuer itself, so
// a run can label the CSRs it makes (bootproof cleanup then sees a
// killed run's CSRs on a reused cluster); a kind cluster without one has
// none.
func TestIssuerOfKind(t *testing.T) {
	iss := &CSRIssuer{}
	if got, ok := IssuerOf(&Kind{CSRIssuer: iss}).(*CSRIssuer); !ok || got != iss {
		t.Errorf("IssuerOf(kind) = %T %p, want its *CSRIssuer %p", IssuerOf(&Kind{CSRIssuer: iss}), got, iss)
	}
	if got := IssuerOf(&Kind{}); got != nil {
		t.Errorf("IssuerOf(kind without an issuer) = %#v, want nil", got)
	}
}
