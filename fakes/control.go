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
	"strconv"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// The control socket lets a person drive a running fleet by hand: the
// fleet serves a small JSON-over-HTTP API on a unix socket that only the
// local user can reach, and 'bootproof nodes reboot' talks to it. A
// socket was chosen over an annotation on the Node because it changes
// nothing an operator under test reads.

// DefaultControlSocket is the socket path when none is given:
// $XDG_RUNTIME_DIR/bootproof-nodes.sock, else /tmp/bootproof-nodes-<uid>.sock.
func DefaultControlSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "bootproof-nodes.sock")
	}
	return filepath.Join(os.TempDir(), "bootproof-nodes-"+strconv.Itoa(os.Getuid())+".sock")
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
// until ctx ends, then removes the socket.
func ServeControl(ctx context.Context, fleet *Fleet, path string) error {
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("control socket %s: another fleet is serving it", path)
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	defer os.Remove(path)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("control socket %s: %w", path, err)
	}
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
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("control socket %s: %w", path, err)
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
		return nil, &scenarios.InputError{Field: "ControlSocket", Value: c.Path, Err: err, Reason: "is a fleet serving this socket?"}
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
