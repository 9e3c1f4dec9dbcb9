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
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestKindClusterConfigGolden(t *testing.T) {
	got, err := KindClusterConfig(KindConfig{Name: "bootproof", GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
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
	if len(kc.Nodes) != 1 || kc.Nodes[0].Role != v1alpha4.ControlPlaneRole || len(kc.KubeadmConfigPatches) != 1 {
		t.Errorf("decoded config: %+v", kc)
	}
	for _, s := range []string{"name: node-monitor-grace-period", "value: 10s", "name: node-monitor-period", "value: 1s", "kind: ClusterConfiguration", DefaultKindImage} {
		if !strings.Contains(string(got), s) {
			t.Errorf("config lacks %q", s)
		}
	}
}

// TestKindPreflightWithoutEngine runs where no container engine answers
// (this machine, CI): the preflight must say so.
func TestKindPreflightWithoutEngine(t *testing.T) {
	if exec.Command("docker", "info").Run() == nil || exec.Command("podman", "info").Run() == nil {
		t.Skip("a container engine answers here; the preflight passes, so its failure cannot be observed")
	}
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
