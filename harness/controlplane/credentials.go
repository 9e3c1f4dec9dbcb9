package controlplane

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
)

// Credentials are a client identity of the cluster.
type Credentials struct {
	// Kubeconfig is the path of a self-contained kubeconfig file.
	Kubeconfig string
	RESTConfig *rest.Config
}

// NodeCredentials returns a kubeconfig for the kubelet identity of node
// name: user system:node:<name> in group system:nodes. With the Node
// authorizer and NodeRestriction it may change only its own Node, its own
// Lease and the pods bound to it.
func (cp *ControlPlane) NodeCredentials(name string) (*Credentials, error) {
	if name == "" {
		return nil, fmt.Errorf("node credentials: node name is empty")
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if c, ok := cp.nodes[name]; ok {
		return &Credentials{Kubeconfig: c.Kubeconfig, RESTConfig: rest.CopyConfig(c.RESTConfig)}, nil
	}
	user := "system:node:" + name
	kp, err := cp.ca.Issue(CertRequest{CommonName: user, Organizations: []string{"system:nodes"}, Client: true})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	path := filepath.Join(cp.dir, "nodes", name+".kubeconfig")
	if err := writeKubeconfig(path, cp.apiURL, user, cp.ca.CertPEM, kp); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	c := &Credentials{Kubeconfig: path, RESTConfig: restConfig(cp.apiURL, cp.ca.CertPEM, kp)}
	cp.nodes[name] = c
	return &Credentials{Kubeconfig: c.Kubeconfig, RESTConfig: rest.CopyConfig(c.RESTConfig)}, nil
}

// ClientCredentials returns a client identity with the given user name and
// groups, e.g. for a subject that must run with exactly its RBAC rules.
func (cp *ControlPlane) ClientCredentials(user string, groups ...string) (*Credentials, error) {
	kp, err := cp.ca.Issue(CertRequest{CommonName: user, Organizations: groups, Client: true})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cp.dir, "nodes", "user-"+sanitize(user)+".kubeconfig")
	if err := writeKubeconfig(path, cp.apiURL, user, cp.ca.CertPEM, kp); err != nil {
		return nil, err
	}
	return &Credentials{Kubeconfig: path, RESTConfig: restConfig(cp.apiURL, cp.ca.CertPEM, kp)}, nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}
