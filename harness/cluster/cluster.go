package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/scenarios/health"
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

// ComponentFaults implements health.FaultReporter: every exit of a
// control-plane process, until the supervisor had it back.
func (e *Embedded) ComponentFaults() []health.Fault {
	var out []health.Fault
	for _, o := range e.CP.Outages() {
		out = append(out, health.Fault{Component: o.Process, From: o.Start, To: o.End, Detail: "exited: " + o.Detail})
	}
	return out
}

// Kubeconfig is an existing cluster reached through a kubeconfig; the
// harness starts nothing in it.
type Kubeconfig struct {
	// csr, when set, issues per-node identities through approved
	// CertificateSigningRequests; otherwise nodes act with the
	// kubeconfig's identity.
	csr   *CSRIssuer
	Path  string
	Grace time.Duration
	rc    *rest.Config
}

// NewKubeconfig loads path (or $KUBECONFIG, ~/.kube/config when empty).
// With grace zero it reads the grace period from the cluster's
// kube-controller-manager, which works on kubeadm-style clusters; where it
// cannot, it says that the grace period is needed.
func NewKubeconfig(ctx context.Context, path string, grace time.Duration, csr bool) (*Kubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: path, Err: err}
	}
	rc.QPS, rc.Burst = 200, 400
	if grace < 0 {
		return nil, &contract.InputError{Field: field.NewPath("GracePeriod"), Value: grace.String(), Reason: "accepted: a positive duration"}
	}
	if err := ProbeAPIServer(ctx, rc, path); err != nil {
		return nil, err
	}
	if err := probeNodes(ctx, rc, path); err != nil {
		return nil, err
	}
	if grace == 0 {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		if grace, err = DetectGracePeriod(ctx, cs); err != nil {
			return nil, &contract.InputError{Field: field.NewPath("GracePeriod"), Reason: fmt.Sprintf("needed for an existing cluster: bootproof could not read kube-controller-manager's --node-monitor-grace-period from the cluster (%v); give the value the cluster runs with (Kubernetes' default is 50s)", err)}
		}
	}
	k := &Kubeconfig{Path: path, Grace: grace, rc: rc}
	if csr {
		k.csr = &CSRIssuer{Admin: rc}
	}
	return k, nil
}

// Name implements scenarios.Cluster.
func (k *Kubeconfig) Name() string { return "kubeconfig" }

// RESTConfig implements scenarios.Cluster.
func (k *Kubeconfig) RESTConfig() *rest.Config { return rest.CopyConfig(k.rc) }

// GracePeriod implements scenarios.Cluster.
func (k *Kubeconfig) GracePeriod() time.Duration { return k.Grace }

// Issuer returns the cluster's CredentialIssuer, or nil when nodes share
// the kubeconfig's identity.
func (k *Kubeconfig) Issuer() CredentialIssuer {
	if k.csr == nil {
		return nil
	}
	return k.csr
}

// IssuerOf returns the CredentialIssuer of a cluster, or nil when its
// clients all share one identity.
func IssuerOf(c any) CredentialIssuer {
	if p, ok := c.(interface{ Issuer() CredentialIssuer }); ok {
		return p.Issuer()
	}
	if i, ok := c.(CredentialIssuer); ok {
		return i
	}
	return nil
}

// Kubeconfig returns the path of the embedded cluster's admin kubeconfig.
func (e *Embedded) Kubeconfig() string { return e.CP.Kubeconfig() }

// Kubeconfig returns the kubeconfig path the cluster was loaded from
// ("" for the default locations).
func (k *Kubeconfig) Kubeconfig() string { return k.Path }

// KubeconfigData returns a self-contained kubeconfig for c's identity:
// the cluster's own kubeconfig (its current context, certificates
// inlined) where it has one, else one written from its REST config.
func KubeconfigData(c interface{ RESTConfig() *rest.Config }) ([]byte, error) {
	if p, ok := c.(interface{ Kubeconfig() string }); ok {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = p.Kubeconfig()
		raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).RawConfig()
		if err != nil {
			return nil, fmt.Errorf("read kubeconfig %s: %w", p.Kubeconfig(), err)
		}
		if err := clientcmdapi.MinifyConfig(&raw); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", p.Kubeconfig(), err)
		}
		if err := clientcmdapi.FlattenConfig(&raw); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", p.Kubeconfig(), err)
		}
		return clientcmd.Write(raw)
	}
	rc := c.RESTConfig()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthority: rc.CAFile,
		CertificateAuthorityData: rc.CAData, TLSServerName: rc.ServerName, InsecureSkipTLSVerify: rc.Insecure}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificate: rc.CertFile, ClientCertificateData: rc.CertData,
		ClientKey: rc.KeyFile, ClientKeyData: rc.KeyData, Token: rc.BearerToken, TokenFile: rc.BearerTokenFile,
		Username: rc.Username, Password: rc.Password}
	cfg.Contexts["bootproof"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.CurrentContext = "bootproof"
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, err
	}
	return clientcmd.Write(*cfg)
}
