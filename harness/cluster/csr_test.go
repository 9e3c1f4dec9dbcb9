package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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

// TestApproveRetriesOnConflict: when another controller writes the
// request between the read and the approval (kind's controller manager
// does), the approval is retried on the latest version, and added once.
func TestApproveRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "req-1"}})
	conflicts := 2
	cs.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "approval" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(certificatesv1.Resource("certificatesigningrequests"), "req-1", errors.New("the object has been modified"))
	})
	if err := approve(ctx, cs, "req-1"); err != nil {
		t.Fatalf("approve after 2 conflicts: %v", err)
	}
	got, _ := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "req-1", metav1.GetOptions{})
	if n := len(got.Status.Conditions); n != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Fatalf("conditions after approval: %+v", got.Status.Conditions)
	}
	// Already approved (by the retry that won, or by someone else): no
	// second condition.
	if err := approve(ctx, cs, "req-1"); err != nil {
		t.Fatal(err)
	}
	got, _ = cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "req-1", metav1.GetOptions{})
	if len(got.Status.Conditions) != 1 {
		t.Fatalf("approved twice: %+v", got.Status.Conditions)
	}
}
