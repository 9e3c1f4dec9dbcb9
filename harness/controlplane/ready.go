package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// waitHTTP polls url until it answers 200, the process exits or ctx ends.
// It is a loop of its own, not a wait poller, because it wakes at once
// when the process exits.
func (cp *ControlPlane) waitHTTP(ctx context.Context, p *process, client *http.Client, url string) error {
	var last string
	for {
		if p.exited() {
			return p.exitError()
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s within %s (last answer: %s); last lines of %s:\n%s",
				p.name, url, cp.cfg.StartTimeout, last, p.logPath, TailFile(p.logPath, tailLines))
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bootstrapPollInterval is the pause between two bootstrap checks.
const bootstrapPollInterval = 200 * time.Millisecond

// waitBootstrap waits for the default namespace and the RBAC bootstrap
// policy (the node and controller-manager bindings): a check at once, then
// one bootstrapPollInterval after each failed check ends. Any API error,
// NotFound or transient, is retried; a process that exits ends the wait.
func (cp *ControlPlane) waitBootstrap(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(cp.rest)
	if err != nil {
		return fmt.Errorf("admin clientset: %w", err)
	}
	var last error
	err = wait.Backoff{Duration: bootstrapPollInterval}.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if last = cp.checkBootstrap(ctx, cs); last == nil {
			return true, nil
		}
		return false, cp.exitedProcess()
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("cluster bootstrap not complete within %s: %w", cp.cfg.StartTimeout, last)
	}
	return err
}

// checkBootstrap returns nil when the bootstrap objects exist, else what
// is missing.
func (cp *ControlPlane) checkBootstrap(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("namespace default: %w", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil && cp.hasController("serviceaccount-controller") {
		return fmt.Errorf("service account default/default: %w", err)
	}
	for _, name := range []string{"system:node", "system:kube-controller-manager"} {
		if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("clusterrole %s: %w", name, err)
		}
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:kube-controller-manager", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("clusterrolebinding system:kube-controller-manager: %w", err)
	}
	return nil
}

// exitedProcess returns the ExitError of a process that has ended, or nil.
func (cp *ControlPlane) exitedProcess() error {
	cp.mu.Lock()
	procs := slices.Clone(cp.procs)
	cp.mu.Unlock()
	for _, p := range procs {
		if p.exited() {
			return p.exitError()
		}
	}
	return nil
}

func (cp *ControlPlane) hasController(name string) bool {
	for _, c := range cp.cfg.Controllers {
		if cn, _ := canonicalController(c); cn == name || cn == "*" {
			return true
		}
	}
	return false
}
