package cli

import (
	"strings"
	"testing"
)

// TestRegistry: the clusters and node backends register themselves, an
// unknown name is refused listing what is registered, a registration
// twice panics, and each cluster's own flags are refused with every
// other cluster.
func TestRegistry(t *testing.T) {
	if got := clusterKinds(); got != "embedded, kind, kubeconfig" {
		t.Errorf("clusters %q", got)
	}
	if got := nodeKinds(); got != "fake, libvirt" {
		t.Errorf("node backends %q", got)
	}
	if _, err := clusterOf("minikube"); err == nil || !strings.Contains(err.Error(), "accepted: embedded, kind, kubeconfig") {
		t.Errorf("unknown cluster: %v", err)
	}
	if _, err := nodesOf("qemu"); err == nil || !strings.Contains(err.Error(), "accepted: fake, libvirt") {
		t.Errorf("unknown backend: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a cluster registered twice did not panic")
			}
		}()
		registerCluster(clusterEmbedded, clusterProvider{})
	}()
	for owner, p := range clusterProviders {
		for _, flag := range p.flags {
			for other := range clusterProviders {
				o := runOptions{cluster: string(other), changed: map[string]bool{flag: true, "cluster": true}, nodeCreds: "shared"}
				err := o.checkClusterFlags()
				if other == owner && err != nil {
					t.Errorf("--%s with --cluster %s: %v", flag, owner, err)
				}
				if other != owner && (err == nil || !strings.Contains(err.Error(), "--"+flag+" applies only with --cluster "+string(owner))) {
					t.Errorf("--%s with --cluster %s: %v, want it refused", flag, other, err)
				}
			}
		}
	}
}
