package controlplane

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenLayout is a fixed run directory with the ports kubeadm uses.
func goldenLayout() layout {
	l := newLayout("/cp")
	l.ports = portSet{etcdClient: 2379, etcdPeer: 2380, apiServer: 6443, controllerManager: 10257}
	return l
}

// TestArgsGolden renders each process's flags, one a line, for a fixed
// layout and configuration and compares them with testdata/<name>.args.golden
// (go test -update rewrites them).
func TestArgsGolden(t *testing.T) {
	l := goldenLayout()
	harness := Config{GracePeriod: 8 * time.Second, MonitorPeriod: time.Second}.Default()
	tests := []struct {
		golden string
		args   []string
	}{
		{"etcd", etcdArgs(l)},
		{"kube-apiserver", apiServerArgs(l)},
		{"kube-controller-manager", controllerManagerArgs(harness, l)},
		// Kubernetes' periods and old controller aliases, canonicalized.
		{"kube-controller-manager-aliases", controllerManagerArgs(Config{
			Controllers: []string{"nodelifecycle", "-podgc", "csrsigning", "*"},
		}.Default(), l)},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			got := strings.Join(tc.args, "\n") + "\n"
			golden := filepath.Join("testdata", tc.golden+".args.golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("flags differ from %s (run go test -update to accept them):\n%s", golden, got)
			}
		})
	}
}

// TestWritePKIWritesLayoutFiles checks that writePKI writes every file the
// layout names, so the paths in the flags exist when the processes start.
func TestWritePKIWritesLayoutFiles(t *testing.T) {
	dir := t.TempDir()
	f := newLayout(dir).pki
	cp := &ControlPlane{dir: dir, cfg: Config{CertValidity: DefaultCertValidity}}
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := cp.writePKI(f); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(f)
	for i := range v.NumField() {
		path := v.Field(i).String()
		if filepath.Dir(path) != filepath.Join(dir, "pki") {
			t.Errorf("pkiFiles.%s = %s, not in the run directory's pki/", v.Type().Field(i).Name, path)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("pkiFiles.%s: %v", v.Type().Field(i).Name, err)
		}
	}
}
