package e2eprovider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/harness/controlplane/e2eprovider"
)

// TestEnvfuncsCreateAndDestroy creates the cluster the way an e2e-framework
// suite does, uses it through the framework's client, and destroys it.
func TestEnvfuncsCreateAndDestroy(t *testing.T) {
	cptest.RequireBinaries(t)
	ctx := context.Background()
	cfg := envconf.New()
	p := e2eprovider.New(controlplane.Config{MonitorPeriod: time.Second})
	ctx, err := envfuncs.CreateClusterWithOpts(p, "bp", e2eprovider.WithGracePeriod(7*time.Second))(ctx, cfg)
	if err != nil {
		t.Fatalf("CreateClusterWithOpts: %v", err)
	}
	cp := p.ControlPlane()
	pids, ports := cp.Pids(), cp.Ports()
	if got := cp.Config().GracePeriod; got != 7*time.Second {
		t.Errorf("grace period = %s, want the 7s set by WithGracePeriod", got)
	}
	if cfg.KubeconfigFile() != p.GetKubeconfig() || p.GetKubeconfig() == "" {
		t.Errorf("envconf kubeconfig %q, provider kubeconfig %q", cfg.KubeconfigFile(), p.GetKubeconfig())
	}
	var ns corev1.Namespace
	if err := cfg.Client().Resources().Get(ctx, "kube-system", "", &ns); err != nil {
		t.Errorf("get kube-system through the framework client: %v", err)
	}
	if _, ok := ctx.Value(support.ClusterNameContextKey("bp")).(support.E2EClusterProvider); !ok {
		t.Errorf("provider not stored in the context")
	}
	logs := t.TempDir()
	if err := p.ExportLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(logs, "kube-controller-manager.log"))
	if err != nil || !strings.Contains(string(data), "node-monitor-grace-period=7s") {
		t.Errorf("exported controller-manager log lacks the grace-period flag (err %v)", err)
	}
	if _, err := envfuncs.DestroyCluster("bp")(ctx, cfg); err != nil {
		t.Fatalf("DestroyCluster: %v", err)
	}
	cptest.AssertGone(t, pids, ports)
}

func TestCreateRejects(t *testing.T) {
	t.Setenv(controlplane.EnvBinDir, "")
	p := e2eprovider.New(controlplane.Config{})
	if _, err := p.Create(context.Background(), "--image", "x"); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("Create with arguments: err = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(bad, []byte("gracePeriod: 8s\nnodes: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := p.CreateWithConfig(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "nodes") || !strings.Contains(err.Error(), "accepted fields") {
		t.Errorf("CreateWithConfig with an unknown field: err = %v", err)
	}
	if err := os.WriteFile(bad, []byte("gracePeriod: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = p.CreateWithConfig(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "gracePeriod") {
		t.Errorf("CreateWithConfig with a bad duration: err = %v", err)
	}
}
