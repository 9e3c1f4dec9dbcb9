package vmprovision

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// State asks the node's agent for its boot ID and module table.
func (ns *NodeSet) State(ctx context.Context, node string) (agentapi.State, error) {
	n, err := ns.node(node)
	if err != nil {
		return agentapi.State{}, err
	}
	return ns.state(ctx, n)
}

// request is a request to the node's agent, with the node's secret.
func (n *vmNode) request(ctx context.Context, method, path string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, n.ctlURL+path, nil)
	if err != nil {
		return nil, err
	}
	agentapi.SetAuthorization(req, n.secret)
	return req, nil
}

func (ns *NodeSet) state(ctx context.Context, n *vmNode) (agentapi.State, error) {
	req, err := n.request(ctx, http.MethodGet, agentapi.PathState)
	if err != nil {
		return agentapi.State{}, err
	}
	resp, err := ns.client.Do(req)
	if err != nil {
		return agentapi.State{}, fmt.Errorf("node %s: agent state: %w", n.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return agentapi.State{}, fmt.Errorf("node %s: agent state: %s", n.name, resp.Status)
	}
	var s agentapi.State
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return agentapi.State{}, fmt.Errorf("node %s: agent state: %w", n.name, err)
	}
	return s, nil
}

func (ns *NodeSet) post(ctx context.Context, n *vmNode, path string) error {
	return ns.postLong(ctx, n, path, ns.client.Timeout)
}

// postLong posts to the agent, waiting up to timeout for its answer.
func (ns *NodeSet) postLong(ctx context.Context, n *vmNode, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := n.request(ctx, http.MethodPost, path)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: agent %s: %w", n.name, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("agent %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// LoadModule asks the node's agent to load a module like modprobe (for
// checks; the subject's worker pods are the real path).
func (ns *NodeSet) LoadModule(ctx context.Context, node, module string) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	req, err := n.request(ctx, http.MethodPut, agentapi.ModulePath(module))
	if err != nil {
		return err
	}
	resp, err := ns.client.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: load module %s: %w", node, module, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("node %s: load module %s: %s", node, module, resp.Status)
	}
	return nil
}

// Dial asks the node's agent to open a TCP connection to addr from inside
// the guest (a diagnostic of what the guest reaches).
func (ns *NodeSet) Dial(ctx context.Context, node, addr string, timeout time.Duration) (agentapi.DialResult, error) {
	n, err := ns.node(node)
	if err != nil {
		return agentapi.DialResult{}, err
	}
	if timeout <= 0 {
		timeout = agentapi.DefaultDialTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+ns.client.Timeout)
	defer cancel()
	req, err := n.request(ctx, http.MethodPost, agentapi.DialPath(addr, timeout))
	if err != nil {
		return agentapi.DialResult{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return agentapi.DialResult{}, fmt.Errorf("node %s: dial %s: %w", node, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return agentapi.DialResult{}, fmt.Errorf("node %s: dial %s: %s: %s", node, addr, resp.Status, strings.TrimSpace(string(body)))
	}
	var d agentapi.DialResult
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return agentapi.DialResult{}, fmt.Errorf("node %s: dial %s: %w", node, addr, err)
	}
	return d, nil
}
