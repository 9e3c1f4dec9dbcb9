package fakes

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/contract"
)

// TestControlSocketPrivate: without a path the socket is made in a new
// directory of mode 0700 (os.MkdirTemp) under $TMPDIR, is mode 0600,
// FindControlSocket finds it, and Close removes both.
func TestControlSocketPrivate(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "")
	if _, err := FindControlSocket(); err == nil || !strings.Contains(err.Error(), "no control socket") {
		t.Errorf("no fleet running: FindControlSocket error %v", err)
	}
	s, err := ListenControl("")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(s.Path)
	// The directory is ownership.TempDir's, which the sweep of a killed
	// run's leftovers knows.
	mine := "bootproof-nodes-" + strconv.Itoa(os.Getpid()) + "-"
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), mine) {
		t.Errorf("socket %s not in a private directory under %s", s.Path, tmp)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory: %v, %v; want mode 0700", st, err)
	}
	if st, err := os.Lstat(s.Path); err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v; want a socket of mode 0600", st, err)
	}
	if got, err := FindControlSocket(); err != nil || got != s.Path {
		t.Errorf("FindControlSocket = %q, %v; want %s", got, err, s.Path)
	}
	// A directory of the pattern that is not private is ignored.
	if err := os.Mkdir(filepath.Join(tmp, mine+"open"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, mine+"open", controlSocketName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := FindControlSocket(); err != nil || got != s.Path {
		t.Errorf("with a non-private look-alike: FindControlSocket = %q, %v", got, err)
	}
	s.Close()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private directory left after Close (stat %v)", err)
	}
}

// TestControlSocketAtPath: a given path gets a socket of mode 0600 that
// was bound inside a private directory and renamed into place; a live
// socket or a file that is not a socket there is refused (and kept); a
// stale socket is replaced.
func TestControlSocketAtPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodes.sock")
	s, err := ListenControl(path)
	if err != nil {
		t.Fatal(err)
	}
	bound := s.l.Addr().String()
	if filepath.Dir(bound) == dir || !strings.HasPrefix(filepath.Base(filepath.Dir(bound)), ".bootproof-nodes-") {
		t.Errorf("socket bound at %s, want a private directory of its own", bound)
	}
	if st, err := os.Lstat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v; want mode 0600", st, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the socket alone", len(entries))
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial the socket: %v", err)
	}
	c.Close()
	var ie *contract.InputError
	if _, err := ListenControl(path); !errors.As(err, &ie) || ie.Field.String() != "ControlSocket" || !strings.Contains(err.Error(), "another fleet is serving it") {
		t.Errorf("second listener on a live socket: %v", err)
	}
	s.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after Close (stat %v)", err)
	}

	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenControl(file); !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a regular file as socket path: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Errorf("the file was changed: %q", b)
	}

	// A stale socket (its server gone without cleanup) is replaced.
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	s, err = ListenControl(path)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Serve(ctx, &Fleet{}); err != nil {
		t.Errorf("Serve after the context ended: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after Serve (stat %v)", err)
	}
}
