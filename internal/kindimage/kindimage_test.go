package kindimage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/bootproof/bootproof/contract"
)

// kubeadmList is what 'kubeadm config images list' printed for v1.37.2.
var kubeadmList = []string{
	"registry.k8s.io/kube-apiserver:v1.37.2",
	"registry.k8s.io/kube-controller-manager:v1.37.2",
	"registry.k8s.io/kube-scheduler:v1.37.2",
	"registry.k8s.io/kube-proxy:v1.37.2",
	"registry.k8s.io/coredns/coredns:v1.14.6",
	"registry.k8s.io/pause:3.10.2",
	"registry.k8s.io/etcd:3.7.0-0",
	"",
}

func TestPlanImages(t *testing.T) {
	plan, err := PlanImages(kubeadmList)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 6 {
		t.Fatalf("planned %d images, want 6 (coredns left out with its addon): %+v", len(plan), plan)
	}
	byRepo := map[string]PlannedImage{}
	for _, p := range plan {
		byRepo[p.Component.Repo] = p
	}
	if p, ok := byRepo["coredns"]; ok {
		t.Errorf("coredns planned as %+v, though its addon is skipped", p)
	}
	// The image's label names the phase a cluster of it must skip.
	if got := strings.Join(SkipPhases(), ","); got != "addon/coredns" {
		t.Errorf("SkipPhases = %q, want addon/coredns", got)
	}
	if p := byRepo["kube-proxy"]; !p.Component.NeedsUserland || p.Spec("/b", "/u.tar").BaseLayer != "/u.tar" {
		t.Errorf("kube-proxy has no userland base: %+v", p)
	}
	if p := byRepo["kube-apiserver"]; p.Spec("/b", "/u.tar").BaseLayer != "" || p.Spec("/b", "").Files[0].Source != "/b/kube-apiserver" {
		t.Errorf("kube-apiserver spec: %+v", p.Spec("/b", "/u.tar"))
	}
	if got := byRepo["etcd"].ArchiveName(); got != "registry.k8s.io_etcd_3.7.0-0.tar" {
		t.Errorf("archive name %q", got)
	}
	for _, bad := range [][]string{
		{"registry.k8s.io/kube-apiserver:v1.37.2", "registry.k8s.io/kindnetd:v1"},
		{"registry.k8s.io/pause@sha256:abc"},
		{"registry.k8s.io/pause"},
	} {
		if _, err := PlanImages(bad); err == nil {
			t.Errorf("PlanImages(%v) accepted", bad)
		}
	}
}

func TestVersionMatches(t *testing.T) {
	for _, tc := range []struct {
		tag, out string
		want     bool
	}{
		{"v1.37.2", "Kubernetes v1.37.2\n", true},
		{"v1.37.2", "Kubernetes v1.37.20\n", false},
		{"3.7.0-0", "etcd Version: 3.7.0\nGit SHA: GitNotFound\nGo Version: go1.26.8\n", true},
		{"3.7.0-0", "etcd Version: 3.6.16\n", false},
		{"v1.14.6", "CoreDNS-1.14.6\nlinux/amd64, go1.26.8, \n", true},
		{"3.10.2", "pause.c v3.10.2-bootproof\n", true},
		{"3.10.2", "pause.c v3.10-bootproof\n", false},
	} {
		if got := VersionMatches(tc.tag, tc.out); got != tc.want {
			t.Errorf("VersionMatches(%q, %q) = %v, want %v", tc.tag, tc.out, got, tc.want)
		}
	}
}

func TestWriteImageArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "coredns")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := ImageSpec{Ref: "registry.k8s.io/coredns/coredns:v1.14.6", Files: []File{{Path: "/usr/local/bin/coredns", Source: bin, Mode: 0o755}},
		Entrypoint: []string{"/usr/local/bin/coredns"}, User: "65532"}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, p := range []string{a, b} {
		if err := WriteImageArchive(spec, p); err != nil {
			t.Fatal(err)
		}
	}
	if sum(t, a) != sum(t, b) {
		t.Error("two archives of the same inputs differ")
	}
	img, err := tarball.ImageFromPath(a, nil)
	if err != nil {
		t.Fatalf("the archive is not a docker image archive: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, spec.Entrypoint) || cf.Config.User != "65532" || cf.OS != "linux" || cf.Architecture != "amd64" ||
		!slices.ContainsFunc(cf.Config.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		t.Errorf("image config: %+v", cf.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
	}
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if h := entries[d]; h == nil || h.Typeflag != tar.TypeDir {
			t.Errorf("layer lacks directory %s", d)
		}
	}
	if h := entries["usr/local/bin/coredns"]; h == nil || h.Mode != 0o755 || h.Size != int64(len("#!/bin/true\n")) {
		t.Errorf("layer's coredns entry: %+v", h)
	}
	// The archive names the image as kubeadm asks for it.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(a) })
	if err != nil || len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{spec.Ref}) {
		t.Errorf("archive manifest: %+v %v", m, err)
	}
	// A base layer comes first.
	base := filepath.Join(dir, "base.tar")
	writeTar(t, base, map[string]string{"etc/os-release": "ID=debian\n"})
	spec.BaseLayer = base
	if err := WriteImageArchive(spec, a); err != nil {
		t.Fatal(err)
	}
	img, _ = tarball.ImageFromPath(a, nil)
	if layers, _ := img.Layers(); len(layers) != 2 {
		t.Errorf("with a base: %d layers, want 2", len(layers))
	}
	if err := WriteImageArchive(ImageSpec{Ref: spec.Ref, Files: []File{{Path: "/x", Source: filepath.Join(dir, "missing")}}}, a); err == nil {
		t.Error("a missing source file was accepted")
	}
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func writeTar(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCNIConfig(t *testing.T) {
	raw, err := CNIConfig("10.244.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		CNIVersion string `json:"cniVersion"`
		Plugins    []struct {
			Type string `json:"type"`
			IPAM struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Plugins) != 2 || conf.Plugins[0].Type != "ptp" || conf.Plugins[1].Type != "portmap" ||
		conf.Plugins[0].IPAM.Type != "host-local" || conf.Plugins[0].IPAM.Ranges[0][0]["subnet"] != "10.244.0.0/24" {
		t.Errorf("CNI config: %s", raw)
	}
	// Every plugin the config names is one the node ships.
	for _, p := range conf.Plugins {
		if _, ok := nodeBinaryPaths[p.Type]; !ok {
			t.Errorf("plugin %s is not installed in the node", p.Type)
		}
	}
}

func TestContainerdConfig(t *testing.T) {
	kindConfig, err := kindBase.ReadFile("kindbase/etc/containerd/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := ContainerdConfig(kindConfig, "registry.k8s.io/pause:3.10.2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `sandbox_image = "registry.k8s.io/pause:3.10.2"`) || strings.Contains(string(out), "pause:3.10\"") {
		t.Errorf("sandbox image not replaced:\n%s", out)
	}
	if len(out)-len(kindConfig) != len(".2") {
		t.Errorf("more than the sandbox image changed (%d bytes)", len(out)-len(kindConfig))
	}
	if _, err := ContainerdConfig([]byte("version = 2\n"), "p"); err == nil {
		t.Error("a config without sandbox_image was accepted")
	}
}

func TestCRIBaseSpec(t *testing.T) {
	in := `{"ociVersion":"1.2.0","process":{"args":["sh"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}]},"hooks":{"createContainer":[{"path":"/other"}]}}`
	out, err := CRIBaseSpec([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OCIVersion string                      `json:"ociVersion"`
		Process    map[string]any              `json:"process"`
		Hooks      map[string][]map[string]any `json:"hooks"`
	}
	if err := json.Unmarshal(out, &spec); err != nil {
		t.Fatal(err)
	}
	if _, ok := spec.Process["rlimits"]; ok {
		t.Error("rlimits kept")
	}
	cc := spec.Hooks["createContainer"]
	if spec.OCIVersion != "1.2.0" || len(cc) != 2 || cc[1]["path"] != "/kind/bin/mount-product-files.sh" {
		t.Errorf("spec: %s", out)
	}
	if _, err := CRIBaseSpec([]byte("not json")); err == nil {
		t.Error("invalid JSON accepted")
	}
}

func TestSystemdSetup(t *testing.T) {
	root := t.TempDir()
	// Debian's merged /usr: /lib is a link into /usr.
	if err := os.MkdirAll(filepath.Join(root, "usr/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	r := openRoot(t, root)
	for _, f := range []string{"lib/systemd/system/multi-user.target.wants/getty.target", "lib/systemd/system/sockets.target.wants/systemd-udevd-control.socket",
		"lib/systemd/system/sockets.target.wants/dbus.socket", "etc/systemd/system/timers.target.wants/apt-daily.timer",
		"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service", "lib/systemd/system/sysinit.target.wants/systemd-sysctl.service"} {
		if err := writeFile(r, f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeFile(r, "etc/systemd/journald.conf", []byte("[Journal]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := systemdSetup(r); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"lib/systemd/system/multi-user.target.wants/getty.target", "lib/systemd/system/sockets.target.wants/systemd-udevd-control.socket",
		"etc/systemd/system/timers.target.wants/apt-daily.timer", "lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s kept", gone)
		}
	}
	for _, kept := range []string{"lib/systemd/system/sockets.target.wants/dbus.socket", "lib/systemd/system/sysinit.target.wants/systemd-sysctl.service"} {
		if _, err := os.Lstat(filepath.Join(root, kept)); err != nil {
			t.Errorf("%s removed", kept)
		}
	}
	for link, target := range map[string]string{
		"sbin/init": "/usr/lib/systemd/systemd",
		"etc/systemd/system/multi-user.target.wants/kubelet.service":          "/etc/systemd/system/kubelet.service",
		"etc/systemd/system/multi-user.target.wants/containerd.service":       "/etc/systemd/system/containerd.service",
		"etc/systemd/system/multi-user.target.wants/undo-mount-hacks.service": "/etc/systemd/system/undo-mount-hacks.service",
		"etc/systemd/system/systemd-binfmt.service":                           "/dev/null",
	} {
		if got, err := os.Readlink(filepath.Join(root, link)); err != nil || got != target {
			t.Errorf("%s -> %q (%v), want %s", link, got, err, target)
		}
	}
	data, _ := os.ReadFile(filepath.Join(root, "etc/systemd/journald.conf"))
	if string(data) != "[Journal]\nReadKMsg=no\n" {
		t.Errorf("journald.conf: %q", data)
	}
}

func TestWriteKindBase(t *testing.T) {
	root := t.TempDir()
	if err := writeKindBase(openRoot(t, root)); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{
		"usr/local/bin/entrypoint":                             0o755,
		"kind/bin/mount-product-files.sh":                      0o755,
		"etc/containerd/config.toml":                           0o644,
		"etc/systemd/system/kubelet.service.d/10-kubeadm.conf": 0o644,
	} {
		st, err := os.Stat(filepath.Join(root, path))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", path, st.Mode(), err, mode)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "ORIGIN.md")); err == nil {
		t.Error("ORIGIN.md copied into the node")
	}
}

// TestKindBaseFilesMatchModule: kindbase/ is kind's images/base/files of
// the kind module go.mod requires, byte for byte.
func TestKindBaseFilesMatchModule(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kind").Output()
	if err != nil {
		t.Fatalf("go mod download sigs.k8s.io/kind: %v", err)
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download -json: %v %s", err, out)
	}
	n := 0
	err = fs.WalkDir(kindBase, "kindbase", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "kindbase/ORIGIN.md" {
			return err
		}
		n++
		ours, _ := kindBase.ReadFile(p)
		theirs, err := os.ReadFile(filepath.Join(m.Dir, "images", "base", "files", strings.TrimPrefix(p, "kindbase/")))
		if err != nil {
			t.Errorf("%s is not in kind %s: %v", p, m.Version, err)
			return nil
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s differs from kind %s's copy: copy it again (kindbase/ORIGIN.md)", p, m.Version)
		}
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	for _, b := range append(append([]string{}, NodeBinaries...), ImageBinaries...) {
		if b == "etcd" || b == "runc" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := Config{BinDir: dir, Tag: "Bootproof/Node:X", EtcdVersion: "v3.6.16-0"}
	err := c.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 3 {
		t.Fatalf("Validate = %v, want three field errors", err)
	}
	fields := map[string]string{}
	for _, e := range joined.Unwrap() {
		var fe *contract.InputError
		if errors.As(e, &fe) {
			fields[fe.Field.String()] = fe.Reason
		}
	}
	if !strings.Contains(fields["BinDir"], "runc") || !strings.Contains(fields["BinDir"], "etcd") || !strings.Contains(fields["BinDir"], "tools/kindnode/build.sh") {
		t.Errorf("BinDir error: %q", fields["BinDir"])
	}
	if _, ok := fields["Tag"]; !ok {
		t.Errorf("an upper-case tag was accepted: %v", fields)
	}
	if !strings.Contains(fields["EtcdVersion"], "e.g. 3.6.16") {
		t.Errorf("EtcdVersion error: %q", fields["EtcdVersion"])
	}
	for _, good := range []string{"", "3.6.16", "3.7.0"} {
		c := Config{BinDir: dir, Tag: "bootproof/node:x", EtcdVersion: good}
		if err := c.Validate(); err != nil && strings.Contains(err.Error(), "EtcdVersion") {
			t.Errorf("EtcdVersion %q refused: %v", good, err)
		}
	}
	if err := (&Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "BinDir") || !strings.Contains(err.Error(), "Tag") {
		t.Errorf("empty config: %v", err)
	}
}

func TestOperatorImageNeedsStaticExecutable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", static, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o := OperatorImage{Out: filepath.Join(dir, "op.tar"), Executable: static}
	if err := o.Validate(); err != nil {
		t.Fatalf("a static executable was refused: %v", err)
	}
	if err := o.Write(); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(o.Out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	if !slices.Equal(cf.Config.Entrypoint, []string{"/bootproof"}) || o.Ref != DefaultOperatorRef {
		t.Errorf("operator image config %+v, ref %s", cf.Config, o.Ref)
	}
	if cf.Architecture != runtime.GOARCH {
		t.Errorf("operator image of a %s executable: architecture %q", runtime.GOARCH, cf.Architecture)
	}
	// A release's arm64 executable gives an arm64 image.
	arm := filepath.Join(dir, "arm64")
	cmd = exec.Command("go", "build", "-o", arm, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOOS=linux", "GOARCH=arm64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for arm64: %v\n%s", err, out)
	}
	ao := OperatorImage{Out: filepath.Join(dir, "op-arm64.tar"), Executable: arm}
	if err := ao.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := ao.Write(); err != nil {
		t.Fatal(err)
	}
	if img, err := tarball.ImageFromPath(ao.Out, nil); err != nil {
		t.Fatal(err)
	} else if cf, _ := img.ConfigFile(); cf.Architecture != "arm64" {
		t.Errorf("operator image of an arm64 executable: architecture %q", cf.Architecture)
	}
	dynamic := OperatorImage{Out: o.Out, Executable: "/bin/sh"}
	if err := dynamic.Validate(); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamic executable: %v", err)
	}
	if err := (&OperatorImage{Executable: static}).Validate(); err == nil || !strings.Contains(err.Error(), "Out") {
		t.Errorf("no output path: %v", err)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{`/a\040b/proc`: "/a b/proc", `/plain`: "/plain", `/tab\011x`: "/tab\tx", `/end\04`: `/end\04`} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// versionRunner answers the version commands planImages runs, as the
// binaries of BinDir would: kubeadm lists kubeadmList, etcd says etcd.
type versionRunner struct{ etcd string }

func (r versionRunner) Output(_ context.Context, name string, args ...string) ([]byte, error) {
	switch filepath.Base(name) {
	case "kubeadm":
		if slices.Contains(args, "images") {
			return []byte(strings.Join(kubeadmList, "\n")), nil
		}
		return []byte("v1.37.2\n"), nil
	case "etcd":
		return []byte("etcd Version: " + r.etcd + "\nGit SHA: GitNotFound\n"), nil
	case "pause":
		return []byte("pause.c v3.10.2-bootproof\n"), nil
	default:
		return []byte("Kubernetes v1.37.2\n"), nil
	}
}

func (r versionRunner) Pipe(ctx context.Context, _ io.Reader, name string, args ...string) ([]byte, error) {
	return r.Output(ctx, name, args...)
}

// TestPlanImagesEtcdVersion: the node image carries the embedded plane's
// etcd (3.6) though kubeadm asks for 3.7; given its version, the etcd image
// is tagged for it, and a binary of yet another version is still refused.
func TestPlanImagesEtcdVersion(t *testing.T) {
	for _, tc := range []struct {
		name, binary, cfgVersion, wantTag, wantErr string
	}{
		{name: "kubeadm's version", binary: "3.7.0", wantTag: "3.7.0-0"},
		{name: "the plane's version, given", binary: "3.6.16", cfgVersion: "3.6.16", wantTag: "3.6.16-0"},
		{name: "the plane's version, not given", binary: "3.6.16", wantErr: "--etcd-version"},
		{name: "another version given", binary: "3.6.16", cfgVersion: "3.6.15", wantErr: "kubeadm asks for registry.k8s.io/etcd:3.6.15-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &builder{cfg: Config{BinDir: "/bin/kindnode", EtcdVersion: tc.cfgVersion}, r: versionRunner{etcd: tc.binary}}
			plan, err := b.planImages(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("planImages = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var tag string
			for _, p := range plan {
				if p.Component.Repo == "etcd" {
					tag = p.Ref.Tag
				}
			}
			if tag != tc.wantTag || !slices.Contains(b.res.Images, "registry.k8s.io/etcd:"+tc.wantTag) {
				t.Errorf("etcd image tag %q (images %v), want %q", tag, b.res.Images, tc.wantTag)
			}
		})
	}
}
