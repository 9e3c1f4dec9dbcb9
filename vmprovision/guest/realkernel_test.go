//go:build linux

package guest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bootproof/bootproof/fakes"
)

const testKernelVersion = "6.1.0-test-amd64"

// fakeModules stands in for finit_module/delete_module: it keeps the
// module table in the sample root's proc/modules, as the kernel would.
type fakeModules struct {
	t        *testing.T
	root     string
	inserted []string
	flags    map[string]int
	finitErr map[string]error
	delErr   map[string]error
}

func (f *fakeModules) table() []string {
	b, err := os.ReadFile(filepath.Join(f.root, "proc/modules"))
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (f *fakeModules) write(lines []string) {
	s := strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), "\n")
	if err := os.WriteFile(filepath.Join(f.root, "proc/modules"), []byte(s+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeModules) FinitModule(fd int, params string, flags int) error {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return err
	}
	name := ModuleName(p)
	if err := f.finitErr[name]; err != nil {
		return err
	}
	f.inserted = append(f.inserted, name)
	f.flags[name] = flags
	f.write(append([]string{name + " 16384 0 - Live 0xffffffffc0000000"}, f.table()...))
	return nil
}

func (f *fakeModules) DeleteModule(name string, flags int) error {
	if err := f.delErr[name]; err != nil {
		return err
	}
	f.write(slices.DeleteFunc(f.table(), func(l string) bool { return strings.HasPrefix(l, name+" ") }))
	return nil
}

// sampleRoot builds a root with proc/ from the named /proc/modules sample
// and lib/modules/<version> from testdata/realkernel/modules.dep, with an
// empty file for each module.
func sampleRoot(t *testing.T, procModules string) (string, *fakeModules) {
	t.Helper()
	root := t.TempDir()
	moddir := filepath.Join(root, "lib/modules", testKernelVersion)
	for _, d := range []string{"proc/sys/kernel/random", moddir} {
		if err := os.MkdirAll(filepath.Join(root, strings.TrimPrefix(d, root)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(filepath.Join("testdata/realkernel", procModules), filepath.Join(root, "proc/modules"))
	copyFile("testdata/realkernel/modules.dep", filepath.Join(moddir, "modules.dep"))
	copyFile("testdata/realkernel/modules.builtin", filepath.Join(moddir, "modules.builtin"))
	if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel/random/boot_id"), []byte("0b1c8e0e-6f2a-4f7e-9c1a-3d2b1a0f9e8d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/realkernel/modules.dep")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		p, _, _ := strings.Cut(l, ":")
		if ModuleName(p) == "not_there" || strings.TrimSpace(p) == "" {
			continue
		}
		full := filepath.Join(moddir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, &fakeModules{t: t, root: root, flags: map[string]int{}, finitErr: map[string]error{}, delErr: map[string]error{}}
}

func newSampleKernel(t *testing.T, procModules string) (*RealKernel, *fakeModules) {
	t.Helper()
	root, fm := sampleRoot(t, procModules)
	k, err := NewRealKernel(RealKernelConfig{Root: root, Version: testKernelVersion, Syscalls: fm,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return k, fm
}

func names(mods []fakes.LoadedModule) []string {
	out := []string{}
	for _, m := range mods {
		out = append(out, m.Name)
	}
	return out
}

func TestParseProcModules(t *testing.T) {
	tests := []struct {
		sample  string
		want    []ProcModule
		wantErr string
	}{
		{sample: "proc-modules-empty"},
		{sample: "proc-modules-bonding", want: []ProcModule{
			{Name: "bonding", Size: 196608, State: "Live"},
			{Name: "tls", Size: 139264, RefCount: 1, UsedBy: []string{"bonding"}, State: "Live"},
			{Name: "virtio_net", Size: 69632, State: "Live"},
			{Name: "net_failover", Size: 24576, RefCount: 1, UsedBy: []string{"virtio_net"}, State: "Live"},
			{Name: "failover", Size: 16384, RefCount: 1, UsedBy: []string{"net_failover"}, State: "Live"},
		}},
		{sample: "proc-modules-states", want: []ProcModule{
			{Name: "dummy", Size: 16384, State: "Loading"},
			{Name: "team", Size: 65536, State: "Unloading"},
			{Name: "nf_tables", Size: 352256, RefCount: 2, State: "Live"},
			{Name: "failover", Size: 16384, State: "Live"},
		}},
		{sample: "proc-modules-taint", want: []ProcModule{{Name: "virtio_net", Size: 69632, State: "Live"}}},
		{sample: "proc-modules-bad", wantErr: "/proc/modules line 1: 2 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata/realkernel", tt.sample))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ParseProcModules(f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseModulesDep(t *testing.T) {
	f, err := os.Open("testdata/realkernel/modules.dep")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dep, err := ParseModulesDep(f)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		deps       []string
	}{
		{"dummy", "kernel/drivers/net/dummy.ko.xz", nil},
		{"virtio_net", "kernel/drivers/net/virtio_net.ko.xz", []string{"net_failover", "failover"}},
		{"bonding", "kernel/drivers/net/bonding/bonding.ko.xz", []string{"tls"}},
		{"plain", "kernel/drivers/plain.ko", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := dep[tt.name]
			if !ok {
				t.Fatalf("%s missing", tt.name)
			}
			if e.Path != tt.path || !slices.Equal(e.Deps, tt.deps) {
				t.Errorf("got %+v, want path %s deps %v", e, tt.path, tt.deps)
			}
		})
	}
	if _, err := ParseModulesDep(strings.NewReader("no colon here\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: err = %v", err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"dummy": "dummy", "virtio-net": "virtio_net", "kernel/net/tls/tls.ko.xz": "tls",
		"a/b/team_mode_roundrobin.ko.zst": "team_mode_roundrobin", "x.ko": "x", "x-y.ko.gz": "x_y",
	} {
		if got := ModuleName(in); got != want {
			t.Errorf("ModuleName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRealKernelIdentity(t *testing.T) {
	k, _ := newSampleKernel(t, "proc-modules-empty")
	if got, want := k.BootID(), "0b1c8e0e-6f2a-4f7e-9c1a-3d2b1a0f9e8d"; got != want {
		t.Errorf("BootID = %q, want %q", got, want)
	}
	if k.Version() != testKernelVersion {
		t.Errorf("Version = %q", k.Version())
	}
	if _, err := NewRealKernel(RealKernelConfig{Root: t.TempDir(), Version: "x"}); err == nil || !strings.Contains(err.Error(), "boot_id") {
		t.Errorf("missing boot_id: err = %v", err)
	}
}

func TestRealKernelLoad(t *testing.T) {
	tests := []struct {
		name       string
		sample     string
		load       string
		finitErr   map[string]error
		wantInsert []string
		wantLoaded []string // load order, oldest first
		wantErr    error
		wantErrMsg string
	}{
		{name: "no deps", sample: "proc-modules-empty", load: "dummy",
			wantInsert: []string{"dummy"}, wantLoaded: []string{"dummy"}},
		{name: "deps first, last listed first", sample: "proc-modules-empty", load: "virtio_net",
			wantInsert: []string{"failover", "net_failover", "virtio_net"}, wantLoaded: []string{"failover", "net_failover", "virtio_net"}},
		{name: "two deps", sample: "proc-modules-empty", load: "virtio-pci",
			wantInsert: []string{"virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci"}},
		{name: "loaded deps skipped", sample: "proc-modules-states", load: "virtio_net",
			wantInsert: []string{"net_failover", "virtio_net"}, wantLoaded: []string{"failover", "nf_tables", "net_failover", "virtio_net"}},
		{name: "already loaded", sample: "proc-modules-bonding", load: "bonding",
			wantInsert: nil, wantLoaded: []string{"failover", "net_failover", "virtio_net", "tls", "bonding"}},
		{name: "EEXIST is success", sample: "proc-modules-empty", load: "dummy", finitErr: map[string]error{"dummy": unix.EEXIST}},
		{name: "builtin", sample: "proc-modules-empty", load: "virtio_ring"},
		{name: "unknown", sample: "proc-modules-empty", load: "nosuchmod",
			wantErr: fakes.ErrUnknownModule, wantErrMsg: "module nosuchmod (kernel " + testKernelVersion},
		{name: "unknown dependency", sample: "proc-modules-empty", load: "missing_dep",
			wantErr: fakes.ErrUnknownModule, wantErrMsg: "dependency not_there of missing_dep"},
		{name: "dependency fails", sample: "proc-modules-empty", load: "bonding", finitErr: map[string]error{"tls": unix.ENOEXEC},
			wantErr: unix.ENOEXEC, wantErrMsg: "dependency tls: finit_module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, fm := newSampleKernel(t, tt.sample)
			if tt.finitErr != nil {
				fm.finitErr = tt.finitErr
			}
			err := k.Load(tt.load)
			if !wantError(t, err, tt.wantErr, tt.wantErrMsg) {
				return
			}
			if !slices.Equal(fm.inserted, tt.wantInsert) {
				t.Errorf("inserted %v, want %v", fm.inserted, tt.wantInsert)
			}
			if tt.wantLoaded != nil {
				if got := names(k.Loaded()); !slices.Equal(got, tt.wantLoaded) {
					t.Errorf("Loaded = %v, want %v", got, tt.wantLoaded)
				}
			}
			for m, fl := range fm.flags {
				if fl != unix.MODULE_INIT_COMPRESSED_FILE {
					t.Errorf("%s: finit flags %#x, want MODULE_INIT_COMPRESSED_FILE for .ko.xz", m, fl)
				}
			}
		})
	}
}

func TestRealKernelLoadUncompressed(t *testing.T) {
	k, fm := newSampleKernel(t, "proc-modules-empty")
	if err := k.Load("plain"); err != nil {
		t.Fatal(err)
	}
	if fm.flags["plain"] != 0 {
		t.Errorf("flags %#x for .ko, want 0", fm.flags["plain"])
	}
}

func TestRealKernelUnload(t *testing.T) {
	tests := []struct {
		name       string
		sample     string
		unload     string
		delErr     map[string]error
		wantLoaded []string
		wantErr    error
		wantErrMsg string
	}{
		{name: "loaded, unused", sample: "proc-modules-bonding", unload: "bonding",
			wantLoaded: []string{"failover", "net_failover", "virtio_net", "tls"}},
		{name: "not loaded", sample: "proc-modules-empty", unload: "dummy", wantLoaded: []string{}},
		{name: "in use", sample: "proc-modules-bonding", unload: "tls",
			wantErr: fakes.ErrModuleInUse, wantErrMsg: "module tls (kernel " + testKernelVersion + ", boot 0b1c8e0e-6f2a-4f7e-9c1a-3d2b1a0f9e8d): module is in use by bonding"},
		{name: "busy in kernel", sample: "proc-modules-bonding", unload: "bonding", delErr: map[string]error{"bonding": unix.EWOULDBLOCK},
			wantErr: fakes.ErrModuleInUse, wantErrMsg: "delete_module"},
		{name: "gone meanwhile", sample: "proc-modules-bonding", unload: "bonding", delErr: map[string]error{"bonding": unix.ENOENT},
			wantLoaded: []string{"failover", "net_failover", "virtio_net", "tls", "bonding"}},
		{name: "other failure", sample: "proc-modules-bonding", unload: "bonding", delErr: map[string]error{"bonding": unix.EPERM},
			wantErr: unix.EPERM, wantErrMsg: "module bonding"},
		{name: "unknown", sample: "proc-modules-empty", unload: "nosuchmod", wantErr: fakes.ErrUnknownModule, wantErrMsg: "nosuchmod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, fm := newSampleKernel(t, tt.sample)
			if tt.delErr != nil {
				fm.delErr = tt.delErr
			}
			err := k.Unload(tt.unload)
			if !wantError(t, err, tt.wantErr, tt.wantErrMsg) {
				return
			}
			if got := names(k.Loaded()); !slices.Equal(got, tt.wantLoaded) {
				t.Errorf("Loaded = %v, want %v", got, tt.wantLoaded)
			}
		})
	}
}

func TestRealKernelLoadedSkipsNotLive(t *testing.T) {
	k, _ := newSampleKernel(t, "proc-modules-states")
	got := k.Loaded()
	if !slices.Equal(names(got), []string{"failover", "nf_tables"}) {
		t.Errorf("Loaded = %v", names(got))
	}
	for _, m := range got {
		if m.LoadedAt.IsZero() {
			t.Errorf("%s: LoadedAt is zero", m.Name)
		}
	}
}

// TestRealKernelHost reads the machine's own kernel, read-only.
func TestRealKernelHost(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skipf("no /proc/sys/kernel/random/boot_id on this machine: %v", err)
	}
	k, err := NewRealKernel(RealKernelConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.BootID()) != 36 || k.Version() == "" {
		t.Errorf("BootID %q, Version %q", k.BootID(), k.Version())
	}
	_ = k.Loaded() // may be empty (containers, kernels without modules)
}

// wantError checks err against the error a table case wants (none when
// want is nil; then err must be nil); it reports whether the case goes
// on to check its results.
func wantError(t *testing.T, err, want error, msg string) bool {
	t.Helper()
	if want != nil {
		if !errors.Is(err, want) || !strings.Contains(err.Error(), msg) {
			t.Fatalf("err = %v, want %v containing %q", err, want, msg)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}
