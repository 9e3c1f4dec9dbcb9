package vmprovision

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/vmprovision/guest"
	"github.com/cavaliergopher/cpio"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./vmprovision -run %s -update to accept):\n--- got\n%s\n--- want\n%s", p, t.Name(), got, want)
	}
}

func testTree(t *testing.T) KernelTree {
	t.Helper()
	kt, err := FindKernelTree("testdata/image/kernel", "")
	if err != nil {
		t.Fatal(err)
	}
	return kt
}

func TestFindKernelTree(t *testing.T) {
	tests := []struct {
		root, version, wantVersion, wantErr string
	}{
		{root: "testdata/image/kernel", wantVersion: "6.1.0-test-amd64"},
		{root: "testdata/image/kernel", version: "6.1.0-test-amd64", wantVersion: "6.1.0-test-amd64"},
		{root: "testdata/image/kernel", version: "5.10.0-9-amd64", wantErr: "vmlinuz-5.10.0-9-amd64"},
		{root: "testdata/image/nowhere", wantErr: "kernel tree testdata/image/nowhere"},
	}
	for _, tt := range tests {
		t.Run(tt.root+"/"+tt.version, func(t *testing.T) {
			kt, err := FindKernelTree(tt.root, tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kt.Version != tt.wantVersion || kt.Vmlinuz() != filepath.Join(tt.root, "boot/vmlinuz-"+tt.wantVersion) {
				t.Errorf("got %+v", kt)
			}
		})
	}
}

func TestPlanImage(t *testing.T) {
	tests := []struct {
		name    string
		modules []string
		golden  string
		wantErr string
	}{
		{name: "default", golden: "image/manifest-default.golden"},
		{name: "dummy only", modules: []string{"dummy"}, golden: "image/manifest-dummy.golden"},
		{name: "unknown module", modules: []string{"dummy", "nosuchmod"}, wantErr: "module nosuchmod for kernel 6.1.0-test-amd64: module not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := PlanImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Modules: tt.modules})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, m.String())
		})
	}
}

func TestPlanImageLoadOrder(t *testing.T) {
	m, err := PlanImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent"})
	if err != nil {
		t.Fatal(err)
	}
	before := func(a, b string) {
		ia, ib := slices.Index(m.Modules, a), slices.Index(m.Modules, b)
		if ia < 0 || ib < 0 || ia > ib {
			t.Errorf("modules %v: want %s before %s", m.Modules, a, b)
		}
	}
	before("tls", "bonding")
	before("team", "team_mode_roundrobin")
	before("failover", "net_failover")
	before("net_failover", "virtio_net")
	before("virtio_ring", "virtio_pci")
	if slices.Contains(m.Modules, "virtio_blk") || slices.Contains(m.Modules, "team_mode_random") {
		t.Errorf("modules %v include ones not asked for", m.Modules)
	}
}

func TestPlanImageMissingAgent(t *testing.T) {
	_, err := PlanImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/none"})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "agent") {
		t.Errorf("err = %v, want a missing agent", err)
	}
}

// readCPIO returns name -> content (directories as "<dir>") of all
// concatenated archives in r, in order; later entries replace earlier ones
// as the kernel's unpacker does.
func readCPIO(t *testing.T, r io.Reader) (map[string]string, []string) {
	t.Helper()
	got := map[string]string{}
	var order []string
	cr := cpio.NewReader(r)
	for {
		h, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(cr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode.IsDir() {
			got[h.Name] = "<dir>"
		} else {
			got[h.Name] = string(b)
		}
		order = append(order, h.Name)
	}
	return got, order
}

func TestBuildImage(t *testing.T) {
	cache := t.TempDir()
	spec := ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Gzip: true}
	img, err := BuildImage(spec, cache)
	if err != nil {
		t.Fatal(err)
	}
	if img.Cached || !strings.HasPrefix(filepath.Base(img.Path), "initramfs-"+img.Hash[:16]) {
		t.Errorf("first build: cached %v path %s hash %s", img.Cached, img.Path, img.Hash)
	}
	again, err := BuildImage(spec, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Path != img.Path {
		t.Errorf("second build: cached %v path %s, want the cached %s", again.Cached, again.Path, img.Path)
	}
	other, err := BuildImage(ImageSpec{Kernel: spec.Kernel, Agent: spec.Agent, Modules: []string{"dummy"}, Gzip: true}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash == img.Hash {
		t.Error("different module sets hash the same")
	}
	plain, err := BuildImage(ImageSpec{Kernel: spec.Kernel, Agent: spec.Agent}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Hash != img.Hash || plain.Path == img.Path || plain.Cached {
		t.Errorf("uncompressed image: hash %s path %s cached %v; gzip: %s %s", plain.Hash, plain.Path, plain.Cached, img.Hash, img.Path)
	}
	pf, err := os.Open(plain.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if gotPlain, _ := readCPIO(t, pf); gotPlain["init"] != "fake agent\n" {
		t.Errorf("uncompressed image: /init %q", gotPlain["init"])
	}

	f, err := os.Open(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got, order := readCPIO(t, zr)
	want := map[string]string{
		"init": "fake agent\n",
		"dev":  "<dir>", "proc": "<dir>", "sys": "<dir>",
		"lib/modules/6.1.0-test-amd64/kernel/net/tls/tls.ko":            "fake module tls\n",
		"lib/modules/6.1.0-test-amd64/kernel/drivers/net/dummy.ko":      "fake module dummy\n",
		"lib/modules/6.1.0-test-amd64/modules.dep":                      img.Manifest.ModulesDep,
		"lib/modules/6.1.0-test-amd64/modules.builtin":                  "kernel/drivers/tty/serial/8250/8250.ko\n",
		"lib/modules/6.1.0-test-amd64/kernel/drivers/net/virtio_net.ko": "fake module virtio_net\n",
	}
	for name, content := range want {
		if got[name] != content {
			t.Errorf("%s: %q, want %q", name, got[name], content)
		}
	}
	if len(got) != len(img.Manifest.Files) {
		t.Errorf("%d entries, manifest has %d", len(got), len(img.Manifest.Files))
	}
	for i, name := range order {
		if d := filepath.Dir(name); d != "." && !slices.Contains(order[:i], d) {
			t.Errorf("%s comes before its directory %s", name, d)
		}
	}
}

func TestNodeInitramfs(t *testing.T) {
	cfg := testAgentConfig(t)
	var b bytes.Buffer
	if err := WriteNodeInitramfs(&b, cfg); err != nil {
		t.Fatal(err)
	}
	got, order := readCPIO(t, &b)
	if want := []string{"etc", "etc/bootproof", "etc/bootproof/agent.json"}; !slices.Equal(order, want) {
		t.Errorf("entries %v, want %v", order, want)
	}
	back, err := guest.DecodeAgentConfig(strings.NewReader(got["etc/bootproof/agent.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if back.NodeName != "vm-0" || back.APIServer != cfg.APIServer {
		t.Errorf("config in the image: %+v", back)
	}
	if err := WriteNodeInitramfs(io.Discard, guest.AgentConfig{NodeName: "vm-1"}); err == nil || !strings.Contains(err.Error(), "vm-1") {
		t.Errorf("invalid config: err = %v", err)
	}
}

func TestWriteBootInitramfs(t *testing.T) {
	cache := t.TempDir()
	img, err := BuildImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Modules: []string{"dummy"}}, cache)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testAgentConfig(t)
	dst := filepath.Join(t.TempDir(), "vm-0.initrd")
	if err := WriteBootInitramfs(dst, img, cfg); err != nil {
		t.Fatal(err)
	}
	all, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(all, main) {
		t.Fatal("boot initramfs does not start with the main image")
	}
	rest := all[len(main):]
	pad := (4 - len(main)%4) % 4
	if !bytes.Equal(rest[:pad], make([]byte, pad)) || (len(main)+pad)%4 != 0 {
		t.Fatalf("node archive not at a 4-byte boundary after %d bytes of main image", len(main))
	}
	got, _ := readCPIO(t, bytes.NewReader(rest[pad:]))
	if !strings.Contains(got["etc/bootproof/agent.json"], `"nodeName": "vm-0"`) {
		t.Errorf("node archive: %v", got)
	}
}

// A module compiled into the kernel (modules.builtin; Ubuntu builds
// virtio_net in, say) needs no file: the plan accepts it and ships none.
func TestPlanImageBuiltinModule(t *testing.T) {
	m, err := PlanImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Modules: []string{"8250", "dummy"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Modules, []string{"dummy"}) {
		t.Errorf("modules %v, want only dummy (8250 is built in)", m.Modules)
	}
	if _, err := PlanImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Modules: []string{"no_such_mod"}}); err == nil {
		t.Error("a module neither in modules.dep nor built in was accepted")
	}
}

// TestFindImage: FindImage finds only what BuildImage wrote, writes
// nothing itself, and says what is missing through ErrNotPrepared.
func TestFindImage(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "images")
	spec := ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent"}
	_, err := FindImage(spec, cache)
	if !errors.Is(err, ErrNotPrepared) || !strings.Contains(err.Error(), spec.Kernel.Version) || !strings.Contains(err.Error(), cache) {
		t.Fatalf("FindImage before BuildImage = %v, want ErrNotPrepared naming the kernel and %s", err, cache)
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FindImage wrote into the cache: %v", err)
	}
	built, err := BuildImage(spec, cache)
	if err != nil {
		t.Fatal(err)
	}
	found, err := FindImage(spec, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !found.Cached || found.Path != built.Path || found.Hash != built.Hash {
		t.Errorf("FindImage = cached %v %s %s, want the built %s %s", found.Cached, found.Path, found.Hash, built.Path, built.Hash)
	}
	if _, err := FindImage(ImageSpec{Kernel: spec.Kernel, Agent: spec.Agent, Modules: []string{"dummy"}}, cache); !errors.Is(err, ErrNotPrepared) {
		t.Errorf("another module set: %v, want ErrNotPrepared", err)
	}
	if _, err := FindImage(ImageSpec{Kernel: spec.Kernel, Agent: "testdata/image/agent/missing"}, cache); err == nil || errors.Is(err, ErrNotPrepared) {
		t.Errorf("a missing agent: %v, want an error other than ErrNotPrepared", err)
	}
}
