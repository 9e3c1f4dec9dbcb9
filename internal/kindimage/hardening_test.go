package kindimage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
)

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestStagingWritesStayInTheNode: a link in the Debian tree that points
// out of it (absolute, or up with ..) never leads a write of the build to
// the host's file.
func TestStagingWritesStayInTheNode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		write func(r *os.Root) error
	}{
		{"journald.conf links to a host file", func(t *testing.T, root, outside string) {
			mustMkdir(t, filepath.Join(root, "etc/systemd"))
			mustSymlink(t, filepath.Join(outside, "victim"), filepath.Join(root, "etc/systemd/journald.conf"))
		}, systemdSetup},
		{"a directory of a generated file links out (absolute)", func(t *testing.T, root, outside string) {
			mustMkdir(t, filepath.Join(root, "etc"))
			mustSymlink(t, outside, filepath.Join(root, "etc/containerd"))
		}, func(r *os.Root) error { return writeFile(r, "/etc/containerd/victim", []byte("node data"), 0o644) }},
		{"a directory of a generated file links out (..)", func(t *testing.T, root, outside string) {
			mustMkdir(t, filepath.Join(root, "etc"))
			rel, err := filepath.Rel(filepath.Join(root, "etc"), outside)
			if err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, rel, filepath.Join(root, "etc/cni"))
		}, func(r *os.Root) error { return writeFile(r, "/etc/cni/victim", []byte("node data"), 0o644) }},
		{"a kind base file is a link to a host file", func(t *testing.T, root, outside string) {
			mustMkdir(t, filepath.Join(root, "usr/local/bin"))
			mustSymlink(t, filepath.Join(outside, "victim"), filepath.Join(root, "usr/local/bin/entrypoint"))
		}, writeKindBase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, []byte("host data"), 0o600); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, root, outside)
			err := tc.write(openRoot(t, root))
			if err == nil {
				t.Error("a write through a link out of the node's tree succeeded")
			}
			if data, _ := os.ReadFile(victim); string(data) != "host data" {
				t.Errorf("the host's file was written: %q", data)
			}
			if st, _ := os.Stat(victim); st.Mode().Perm() != 0o600 {
				t.Errorf("the host's file's mode changed: %v", st.Mode())
			}
		})
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestCheckWorkDir: a root build trusts a work directory only if no one
// but root could have written into it or renamed it.
func TestCheckWorkDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the check is about directories owned by another user (run make test as root, as CI does)")
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, base string) string // returns the work dir
		bad   string                                 // the path the error names; "" when accepted
	}{
		{"missing: made 0755", func(t *testing.T, base string) string { return filepath.Join(base, "a/b") }, ""},
		{"root's, 0755", func(t *testing.T, base string) string { return mkdirMode(t, base, "w", 0o755) }, ""},
		{"under a sticky world-writable parent", func(t *testing.T, base string) string {
			return filepath.Join(mkdirMode(t, base, "tmp", os.ModeSticky|0o777), "w")
		}, ""},
		{"group-writable", func(t *testing.T, base string) string { return mkdirMode(t, base, "w", 0o775) }, "w"},
		{"another user's", func(t *testing.T, base string) string {
			p := mkdirMode(t, base, "w", 0o755)
			chown(t, p, 1000)
			return p
		}, "w"},
		{"a link to root's directory", func(t *testing.T, base string) string {
			mkdirMode(t, base, "real", 0o755)
			mustSymlink(t, filepath.Join(base, "real"), filepath.Join(base, "w"))
			return filepath.Join(base, "w")
		}, "w"},
		{"under another user's home", func(t *testing.T, base string) string {
			home := mkdirMode(t, base, "home", 0o755)
			chown(t, home, 1000)
			return filepath.Join(home, ".cache/bootproof/kind-image")
		}, "home"},
		{"under a world-writable parent without the sticky bit", func(t *testing.T, base string) string {
			return filepath.Join(mkdirMode(t, base, "open", 0o777), "w")
		}, "open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			dir := tc.setup(t, base)
			got, err := CheckWorkDir(dir)
			var unsafe *UnsafeDirError
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.bad == "" && got != dir:
				t.Errorf("returned %s, want %s", got, dir)
			case tc.bad != "" && !errors.As(err, &unsafe):
				t.Fatalf("accepted (err %v)", err)
			case tc.bad != "" && unsafe.Path != filepath.Join(base, tc.bad):
				t.Errorf("names %s, want %s: %v", unsafe.Path, filepath.Join(base, tc.bad), err)
			case tc.bad != "" && !strings.Contains(err.Error(), "--work-dir"):
				t.Errorf("does not say what is accepted: %v", err)
			}
		})
	}
}

func mkdirMode(t *testing.T, base, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(base, name)
	mustMkdir(t, p)
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// TestLockWorkDir: a second build on the same work directory waits for
// the first, says so, and gives up with its context.
func TestLockWorkDir(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockWorkDir(context.Background(), dir, func() { t.Error("the first build waited") })
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		u, err := lockWorkDir(context.Background(), dir, func() { close(waited) })
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case <-waited:
	case err := <-got:
		t.Fatalf("the second build did not wait (err %v)", err)
	case <-time.After(time.Minute):
		t.Fatal("the second build never said it waits")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lockWorkDir(ctx, dir, func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v", err)
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("the second build, after the first: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the second build did not get the lock once the first ended")
	}
}

// debootstrapRunner plays debootstrap: it records the arguments, makes a
// tree with an os-release and a link out of it, and prints out.
type debootstrapRunner struct {
	args    [][]string
	out     string
	fail    bool
	outside string
}

func (r *debootstrapRunner) Output(_ context.Context, name string, args ...string) ([]byte, error) {
	r.args = append(r.args, append([]string{name}, args...))
	if r.fail {
		return []byte(r.out), errors.New("exit status 1")
	}
	target := args[len(args)-2]
	if err := os.MkdirAll(filepath.Join(target, "etc"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(target, "etc/os-release"), []byte("ID=debian\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(target, "var/cache"), 0o755); err != nil {
		return nil, err
	}
	// A package's link out of the tree where a trimmed path is.
	if err := os.Symlink(r.outside, filepath.Join(target, "var/cache/apt")); err != nil {
		return nil, err
	}
	return []byte(r.out), nil
}

func (r *debootstrapRunner) Pipe(ctx context.Context, _ io.Reader, name string, args ...string) ([]byte, error) {
	return r.Output(ctx, name, args...)
}

// TestDebootstrapVerifies: debootstrap checks the Release signature with
// the keyring (and refuses what it cannot check), its warnings and
// signature lines reach the progress output, the cache key changes with
// the keyring and the recipe, and trimming never follows a link out.
func TestDebootstrapVerifies(t *testing.T) {
	work, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(t.TempDir(), "keys.gpg")
	if err := os.WriteFile(keyring, []byte("keys 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := Rootfs{Name: "node", Suite: "bookworm", Mirror: "http://deb.example/debian", Keyring: keyring, Packages: []string{"bash"}}
	r := &debootstrapRunner{outside: outside, out: "I: Retrieving InRelease \nI: Checking Release signature\nI: Valid Release signature (key id 4CB50190207B4758A3F73A796ED0E7B82643E131)\nW: an example warning\nI: Base system installed successfully.\n"}
	var progress bytes.Buffer
	dir, cached, err := Debootstrap(context.Background(), r, work, fs, &progress)
	if err != nil || cached {
		t.Fatalf("first: cached %v, %v", cached, err)
	}
	if len(r.args) != 1 || !slices.Contains(r.args[0], "--keyring="+keyring) || !slices.Contains(r.args[0], "--force-check-gpg") {
		t.Errorf("debootstrap ran as %q, want --keyring=%s --force-check-gpg", r.args, keyring)
	}
	for _, want := range []string{"debootstrap node: W: an example warning", "debootstrap node: I: Valid Release signature"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("trimming var/cache/apt removed the host's file through a link: %v", err)
	}
	if again, cached, err := Debootstrap(context.Background(), r, work, fs, io.Discard); err != nil || !cached || again != dir {
		t.Errorf("second: %s cached %v, %v; want %s cached", again, cached, err, dir)
	}
	key1, _ := fs.Key()
	if err := os.WriteFile(keyring, []byte("keys 2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if key2, _ := fs.Key(); key2 == key1 {
		t.Error("the cache key does not change with the keyring")
	}
	// A tree of recipe 1 (no signature check) has another key.
	if strings.HasSuffix(dir, "-"+oldRecipeKey(fs)) {
		t.Error("the cache key is recipe 1's: unverified trees would be reused")
	}
	fs.Keyring = filepath.Join(t.TempDir(), "missing.gpg")
	if _, _, err := Debootstrap(context.Background(), r, work, fs, io.Discard); err == nil || !strings.Contains(err.Error(), "debian-archive-keyring") {
		t.Errorf("a missing keyring: %v, want an error naming the package to install", err)
	}
	failing := &debootstrapRunner{fail: true, out: "I: Checking Release signature\nE: Release signed by unknown key (key id 0123)\n"}
	fs.Keyring = keyring
	progress.Reset()
	if _, _, err := Debootstrap(context.Background(), failing, t.TempDir(), fs, &progress); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("an unverifiable archive: %v", err)
	}
	if !strings.Contains(progress.String(), "E: Release signed by unknown key") {
		t.Errorf("the failure's E: line not shown: %q", progress.String())
	}
}

// oldRecipeKey is the key recipe 1 gave a tree (no keyring in it).
func oldRecipeKey(fs Rootfs) string {
	h := sha256.Sum256([]byte(strings.Join([]string{"1", fs.Suite, fs.Mirror, strings.Join(fs.Packages, ",")}, "\n")))
	return hex.EncodeToString(h[:8])
}

// TestBuildRefusesAnUnsafeWorkDir: Build checks the work directory before
// it runs anything.
func TestBuildRefusesAnUnsafeWorkDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: Build runs only as root (run make test as root, as CI does)")
	}
	bin := t.TempDir()
	for _, b := range append(append([]string{}, NodeBinaries...), ImageBinaries...) {
		if err := os.WriteFile(filepath.Join(bin, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(t.TempDir(), "w")
	mkdirMode(t, filepath.Dir(work), "w", 0o777)
	r := &debootstrapRunner{}
	_, err := Build(context.Background(), Config{BinDir: bin, Tag: "bootproof/kind-node:test", WorkDir: work}, r)
	var unsafe *UnsafeDirError
	if !errors.As(err, &unsafe) || unsafe.Path != work {
		t.Errorf("Build in a world-writable work dir: %v", err)
	}
	if len(r.args) != 0 {
		t.Errorf("Build ran %q before refusing", r.args)
	}
}

func TestConfigLabels(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		ok     bool
	}{
		{map[string]string{"dev.bootproof.checkout": "0123abcd"}, true},
		{map[string]string{"a b": "x"}, false},
		{map[string]string{"k": "two words"}, false},
		{map[string]string{"k": `quote"`}, false},
	} {
		c := Config{BinDir: t.TempDir(), Tag: "bootproof/kind-node:x", Labels: tc.labels}
		err := c.Validate()
		var bad bool
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				var ie *contract.InputError
				if errors.As(e, &ie) && ie.Field.String() == "Labels" {
					bad = true
				}
			}
		}
		if bad == tc.ok {
			t.Errorf("labels %v: %v", tc.labels, err)
		}
	}
}

// dockerRunner plays docker for pruning and importing: it records each
// command and answers 'image ls' with images.
type dockerRunner struct {
	cmds   [][]string
	images string
	rmiErr map[string]bool
}

func (r *dockerRunner) Output(_ context.Context, name string, args ...string) ([]byte, error) {
	r.cmds = append(r.cmds, append([]string{name}, args...))
	switch {
	case len(args) > 1 && args[0] == "image" && args[1] == "ls":
		return []byte(r.images), nil
	case len(args) > 1 && args[0] == "rmi" && r.rmiErr[args[1]]:
		return []byte("conflict: image is being used by a running container"), errors.New("exit status 1")
	}
	return nil, nil
}

func (r *dockerRunner) Pipe(ctx context.Context, _ io.Reader, name string, args ...string) ([]byte, error) {
	return r.Output(ctx, name, args...)
}

// TestPruneOnlyThisCheckoutsImages: pruning asks docker for the images of
// the tag's repository carrying the checkout's label, removes those but
// the new one, and a removal docker refuses leaves the build successful.
func TestPruneOnlyThisCheckoutsImages(t *testing.T) {
	r := &dockerRunner{images: "bootproof/kind-node:v1-new\nbootproof/kind-node:v1-old\nbootproof/kind-node:v1-inuse\n",
		rmiErr: map[string]bool{"bootproof/kind-node:v1-inuse": true}}
	var progress bytes.Buffer
	b := &builder{cfg: Config{Tag: "bootproof/kind-node:v1-new", Docker: "docker", Prune: true, Progress: &progress,
		Labels: map[string]string{"dev.bootproof.checkout": "abc123"}}, r: r}
	b.pruneSuperseded(context.Background())
	want := [][]string{
		{"docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", "--filter", "label=dev.bootproof.checkout=abc123", "bootproof/kind-node"},
		{"docker", "rmi", "bootproof/kind-node:v1-old"},
		{"docker", "rmi", "bootproof/kind-node:v1-inuse"},
	}
	if !slices.EqualFunc(r.cmds, want, slices.Equal) {
		t.Errorf("ran\n %q\nwant\n %q", r.cmds, want)
	}
	if !strings.Contains(progress.String(), "bootproof/kind-node:v1-inuse stays") {
		t.Errorf("a refused removal is not reported: %s", progress.String())
	}
	c := Config{BinDir: t.TempDir(), Tag: "bootproof/kind-node:x", Prune: true}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "needs Labels") {
		t.Errorf("Prune without labels: %v", err)
	}
}

// TestImportRunsNoShell: the node's filesystem is imported with no shell
// on the host, so a path with shell syntax in it is never run.
func TestImportRunsNoShell(t *testing.T) {
	staging := filepath.Join(t.TempDir(), "staging-$(touch pwned)")
	mustMkdir(t, staging)
	r := &dockerRunner{}
	b := &builder{cfg: Config{Docker: "docker"}, r: r}
	if err := b.importStaging(context.Background(), staging, "img"); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.cmds {
		if c[0] == "bash" || c[0] == "sh" || slices.Contains(c, "-c") {
			t.Errorf("a shell ran on the host: %q", c)
		}
	}
	if len(r.cmds) != 2 || !slices.Contains(r.cmds[0], staging) || r.cmds[1][0] != "docker" || r.cmds[1][1] != "import" {
		t.Errorf("ran %q, want tar of %s then docker import", r.cmds, staging)
	}
}
