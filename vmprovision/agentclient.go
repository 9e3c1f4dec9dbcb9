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

func (ns *NodeSet) state(ctx context.Context, n *vmNode) (agentapi.State, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.ctlURL+agentapi.PathState, nil)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.ctlURL+path, nil)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, n.ctlURL+agentapi.ModulePath(module), nil)
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
