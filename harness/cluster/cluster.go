package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/bootproof/bootproof/harness/controlplane"
)

// CredentialIssuer is the optional capability of a cluster that can issue
// client identities: nodes then act as system:node:<name> and subjects
// with exactly their RBAC.
type CredentialIssuer interface {
	NodeRESTConfig(node string) (*rest.Config, error)
	UserRESTConfig(user string, groups ...string) (*rest.Config, error)
}

// Embedded is a started embedded control plane.
type Embedded struct {
	CP *controlplane.ControlPlane
}

// StartEmbedded starts an embedded control plane.
func StartEmbedded(ctx context.Context, cfg controlplane.Config) (*Embedded, error) {
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Embedded{CP: cp}, nil
}

// Name implements scenarios.Cluster.
func (e *Embedded) Name() string { return "embedded" }

// RESTConfig implements scenarios.Cluster.
func (e *Embedded) RESTConfig() *rest.Config { return e.CP.RESTConfig() }

// GracePeriod implements scenarios.Cluster.
func (e *Embedded) GracePeriod() time.Duration { return e.CP.Config().GracePeriod }

// NodeRESTConfig implements CredentialIssuer.
func (e *Embedded) NodeRESTConfig(node string) (*rest.Config, error) {
	c, err := e.CP.NodeCredentials(node)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig, nil
}

// UserRESTConfig implements CredentialIssuer.
func (e *Embedded) UserRESTConfig(user string, groups ...string) (*rest.Config, error) {
	c, err := e.CP.ClientCredentials(user, groups...)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig, nil
}

// Stop stops the control plane.
func (e *Embedded) Stop() { e.CP.Stop() }

// Kubeconfig is an existing cluster reached through a kubeconfig.
type Kubeconfig struct {
	Path  string
	Grace time.Duration
	rc    *rest.Config
}

// NewKubeconfig loads path (or $KUBECONFIG, ~/.kube/config when empty).
// The grace period cannot be read from every cluster, so it is given.
func NewKubeconfig(path string, grace time.Duration) (*Kubeconfig, error) {
	if grace <= 0 {
		return nil, fmt.Errorf("--grace-period is required with --cluster kubeconfig: bootproof cannot read kube-controller-manager's --node-monitor-grace-period from every cluster; give the value the cluster runs with (Kubernetes' default is 50s)")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	rc.QPS, rc.Burst = 200, 400
	return &Kubeconfig{Path: path, Grace: grace, rc: rc}, nil
}

// Name implements scenarios.Cluster.
func (k *Kubeconfig) Name() string { return "kubeconfig" }

// RESTConfig implements scenarios.Cluster.
func (k *Kubeconfig) RESTConfig() *rest.Config { return rest.CopyConfig(k.rc) }

// GracePeriod implements scenarios.Cluster.
func (k *Kubeconfig) GracePeriod() time.Duration { return k.Grace }
