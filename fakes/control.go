package fakes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/ownership"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The control socket lets a person drive a running fleet by hand: the
// fleet serves a small JSON-over-HTTP API on a unix socket that only the
// local user can reach, and 'bootproof nodes reboot' talks to it. A
// socket was chosen over an annotation on the Node because it changes
// nothing an operator under test reads.

// DefaultControlSocket is the socket path when none is given:
// $XDG_RUNTIME_DIR/bootproof-nodes.sock (a directory only the user can
// reach), else "": ListenControl then creates the socket in a new private
// directory, and FindControlSocket finds it. A predictable name in a
// shared /tmp is never used by default.
func DefaultControlSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "bootproof-nodes.sock")
	}
	return ""
}

// controlDirKind is the kind of the private directories ListenControl
// makes when no path is given (ownership.TempDir: bootproof-nodes-<pid>-
// <random>), so the directory of a fleet that was killed is removed by
// the next run or 'bootproof cleanup' (ownership.SweepTempDirs).
const controlDirKind = "nodes"

// controlSocketName is the socket's name in such a directory.
const controlSocketName = "control.sock"

// FindControlSocket returns the control socket of the running fleet of
// this user: DefaultControlSocket, or the one socket in a private
// directory ListenControl made (mode 0700, owned by this user).
func FindControlSocket() (string, error) {
	if p := DefaultControlSocket(); p != "" {
		return p, nil
	}
	matches, _ := filepath.Glob(filepath.Join(ownership.TempDirGlob(controlDirKind), controlSocketName))
	var found []string
	for _, m := range matches {
		if privateDir(filepath.Dir(m)) {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", &contract.InputError{Field: field.NewPath("ControlSocket"),
			Reason: "no control socket of a running 'bootproof nodes run' found: start one, or give its socket"}
	}
	return "", &contract.InputError{Field: field.NewPath("ControlSocket"), Reason: fmt.Sprintf("several fleets serve control sockets (%s): give the one to use", strings.Join(found, ", "))}
}

// privateDir reports whether dir is a directory (not a link) of mode
// 0700 owned by this user.
func privateDir(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid()
}

// ControlSocket is a listening control socket; Serve serves a fleet on it.
type ControlSocket struct {
	// Path is where clients connect.
	Path string
	l    net.Listener
	// private is the private directory ListenControl made to hold Path,
	// removed by Close; empty when Path was given.
	private string
	// created is Path as created, so Close removes only this socket.
	created os.FileInfo
}

// ListenControl creates the control socket at path, or, with path "", in
// a new private directory under os.TempDir(). The socket is bound inside
// a directory of mode 0700 made by os.MkdirTemp and made mode 0600 there,
// so no other user can reach it at any moment; a given path is then
// renamed into place. A live socket at path (another fleet) or a file
// that is not a socket is refused; a stale socket is replaced.
func ListenControl(path string) (*ControlSocket, error) {
	if path == "" {
		dir, err := ownership.TempDir(controlDirKind)
		if err != nil {
			return nil, fmt.Errorf("control socket: %w", err)
		}
		s, err := bindPrivate(dir, filepath.Join(dir, controlSocketName))
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		s.private = dir
		return s, nil
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, &contract.InputError{Field: field.NewPath("ControlSocket"), Value: path, Reason: "another fleet is serving it: stop it or give another path"}
	}
	if st, err := os.Lstat(path); err == nil && st.Mode().Type() != os.ModeSocket {
		return nil, &contract.InputError{Field: field.NewPath("ControlSocket"), Value: path, Reason: "exists and is not a socket: give another path"}
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".bootproof-nodes-")
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	s, err := bindPrivate(dir, path)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// bindPrivate listens on a socket in the private directory dir, makes it
// mode 0600 and moves it to path (unless it is there already).
func bindPrivate(dir, path string) (*ControlSocket, error) {
	tmp := filepath.Join(dir, "s")
	if filepath.Dir(path) == dir {
		tmp = path
	}
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	// The listener would unlink its bound name at Close; Close removes
	// the socket itself, and only if it is still this one.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil && tmp != path {
		err = os.Rename(tmp, path)
	}
	var st os.FileInfo
	if err == nil {
		st, err = os.Lstat(path)
	}
	if err != nil {
		l.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return &ControlSocket{Path: path, l: l, created: st}, nil
}

// Close stops listening and removes the socket (if it is still the one
// ListenControl made) and the private directory.
func (s *ControlSocket) Close() {
	s.l.Close()
	if st, err := os.Lstat(s.Path); err == nil && os.SameFile(st, s.created) {
		_ = os.Remove(s.Path)
	}
	if s.private != "" {
		_ = os.RemoveAll(s.private)
	}
}

// ControlRequest asks for one action on one node.
type ControlRequest struct {
	Node string `json:"node"`
	// Action: reboot, restart-kubelet, pause, resume.
	Action        string        `json:"action"`
	Downtime      time.Duration `json:"downtime,omitempty"`
	NotReadyFor   time.Duration `json:"notReadyFor,omitempty"`
	KernelVersion string        `json:"kernelVersion,omitempty"`
}

// NodeState is a node as the control API reports it.
type NodeState struct {
	Node          string   `json:"node"`
	BootID        string   `json:"bootID"`
	KernelVersion string   `json:"kernelVersion"`
	Modules       []string `json:"modules"`
}

// ControlResponse answers a request.
type ControlResponse struct {
	Error  string      `json:"error,omitempty"`
	Before *NodeState  `json:"before,omitempty"`
	After  *NodeState  `json:"after,omitempty"`
	Nodes  []NodeState `json:"nodes,omitempty"`
}

func stateOf(k *Kubelet) NodeState {
	s := NodeState{Node: k.NodeName(), BootID: k.Kernel().BootID(), KernelVersion: k.Kernel().Version(), Modules: []string{}}
	for _, m := range k.Kernel().Loaded() {
		s.Modules = append(s.Modules, m.Name)
	}
	return s
}

// ServeControl serves the control API for fleet on a unix socket at path
// (see ListenControl) until ctx ends, then removes the socket.
func ServeControl(ctx context.Context, fleet *Fleet, path string) error {
	s, err := ListenControl(path)
	if err != nil {
		return err
	}
	return s.Serve(ctx, fleet)
}

// Serve serves the control API for fleet until ctx ends, then closes s.
func (s *ControlSocket) Serve(ctx context.Context, fleet *Fleet) error {
	defer s.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		var resp ControlResponse
		for _, k := range fleet.Kubelets() {
			resp.Nodes = append(resp.Nodes, stateOf(k))
		}
		sort.Slice(resp.Nodes, func(i, j int) bool { return resp.Nodes[i].Node < resp.Nodes[j].Node })
		writeJSON(w, http.StatusOK, resp)
	})
	mux.HandleFunc("POST /v1/act", func(w http.ResponseWriter, r *http.Request) {
		var req ControlRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, ControlResponse{Error: "decode request: " + err.Error()})
			return
		}
		k := fleet.Kubelet(req.Node)
		if k == nil {
			writeJSON(w, http.StatusNotFound, ControlResponse{Error: fmt.Sprintf("no node %q in this fleet", req.Node)})
			return
		}
		before := stateOf(k)
		var err error
		switch req.Action {
		case "reboot":
			err = k.Reboot(r.Context(), RebootSpec{Downtime: req.Downtime, AfterRenewal: true,
				Startup: Startup{NotReadyFor: req.NotReadyFor}, KernelVersion: req.KernelVersion})
		case "restart-kubelet":
			err = k.RestartKubelet(r.Context(), req.Downtime)
		case "pause":
			k.Pause()
		case "resume":
			k.Resume()
		default:
			err = fmt.Errorf("unknown action %q: accepted: reboot, restart-kubelet, pause, resume", req.Action)
		}
		if err != nil {
			writeJSON(w, http.StatusConflict, ControlResponse{Error: err.Error(), Before: &before})
			return
		}
		after := stateOf(k)
		writeJSON(w, http.StatusOK, ControlResponse{Before: &before, After: &after})
	})
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(s.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("control socket %s: %w", s.Path, err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ControlClient talks to a fleet's control socket.
type ControlClient struct {
	Path string
	http *http.Client
}

// NewControlClient returns a client for the socket at path.
func NewControlClient(path string) *ControlClient {
	return &ControlClient{Path: path, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}}
}

// Act performs req and returns the node's state before and after.
func (c *ControlClient) Act(ctx context.Context, req ControlRequest) (*ControlResponse, error) {
	body, _ := json.Marshal(req)
	return c.do(ctx, http.MethodPost, "/v1/act", body)
}

// Nodes lists the fleet's nodes.
func (c *ControlClient) Nodes(ctx context.Context) (*ControlResponse, error) {
	return c.do(ctx, http.MethodGet, "/v1/nodes", nil)
}

func (c *ControlClient) do(ctx context.Context, method, path string, body []byte) (*ControlResponse, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://fleet"+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &contract.InputError{Field: field.NewPath("ControlSocket"), Value: c.Path, Err: err, Reason: "is a fleet serving this socket?"}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", c.Path, err)
	}
	var out ControlResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("control socket %s: bad answer %q: %w", c.Path, data, err)
	}
	if out.Error != "" {
		return &out, errors.New(out.Error)
	}
	return &out, nil
}
