package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// waitHTTP polls url until it answers 200, the process exits or ctx ends.
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

// waitBootstrap waits for the default namespace and the RBAC bootstrap
// policy (the node and controller-manager bindings).
func (cp *ControlPlane) waitBootstrap(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(cp.rest)
	if err != nil {
		return fmt.Errorf("admin clientset: %w", err)
	}
	check := func() error {
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
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			// Transient API errors are retried like NotFound.
			_ = err
		}
		cp.mu.Lock()
		procs := slices.Clone(cp.procs)
		cp.mu.Unlock()
		for _, p := range procs {
			if p.exited() {
				return p.exitError()
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster bootstrap not complete within %s: %w", cp.cfg.StartTimeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (cp *ControlPlane) hasController(name string) bool {
	for _, c := range cp.cfg.Controllers {
		if cn, _ := canonicalController(c); cn == name || cn == "*" {
			return true
		}
	}
	return false
}
