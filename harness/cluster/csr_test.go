package cluster

import (
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// TestCSRExpiration: every CSR asks for a lifetime sized to a run
// (spec.expirationSeconds), never less than the API's minimum of 600s.
func TestCSRExpiration(t *testing.T) {
	for validity, want := range map[time.Duration]int32{
		0:                    int32(DefaultCSRValidity.Seconds()),
		time.Minute:          600,
		48 * time.Hour:       172800,
		1000000 * time.Hour:  1<<31 - 1,
		MinCSRValidity + 1e9: 601,
	} {
		csr := newCSR([]byte("req"), certificatesv1.KubeAPIServerClientKubeletSignerName, validity)
		if csr.Spec.ExpirationSeconds == nil || *csr.Spec.ExpirationSeconds != want {
			t.Errorf("validity %s: expirationSeconds %v, want %d", validity, csr.Spec.ExpirationSeconds, want)
		}
		if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || string(csr.Spec.Request) != "req" {
			t.Errorf("validity %s: spec %+v", validity, csr.Spec)
		}
	}
	if DefaultCSRValidity != 24*time.Hour {
		t.Errorf("DefaultCSRValidity = %s", DefaultCSRValidity)
	}
}
