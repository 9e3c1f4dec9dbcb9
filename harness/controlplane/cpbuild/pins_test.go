package cpbuild

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPins: the pins inside the binary are tools/controlplane's, byte for
// byte ('make generate' copies them), and name the versions reported.
func TestPins(t *testing.T) {
	for _, m := range []string{"etcd", "kube"} {
		mod, sum, err := ModuleFiles(m)
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string][]byte{"go.mod": mod, "go.sum": sum} {
			want, err := os.ReadFile(filepath.Join("../../../tools/controlplane", m, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("pins/%s.%s differs from tools/controlplane/%s/%s: run 'make generate'", m, strings.TrimPrefix(name, "go."), m, name)
			}
		}
	}
	if _, _, err := ModuleFiles("kubelet"); err == nil {
		t.Error("ModuleFiles(kubelet) gave files")
	}
	kube, _, _ := ModuleFiles("kube")
	etcd, _, _ := ModuleFiles("etcd")
	if v := KubernetesVersion(); !strings.HasPrefix(v, "v1.") || !bytes.Contains(kube, []byte("k8s.io/kubernetes "+v+"\n")) {
		t.Errorf("KubernetesVersion = %q", v)
	}
	if v := EtcdVersion(); !strings.HasPrefix(v, "v3.") || !bytes.Contains(etcd, []byte("go.etcd.io/etcd/server/v3 "+v+"\n")) {
		t.Errorf("EtcdVersion = %q", v)
	}
	if want := "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion() + " "; !strings.Contains(Ldflags(), want) {
		t.Errorf("Ldflags = %q lacks %q", Ldflags(), want)
	}
}
