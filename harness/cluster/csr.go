package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// CSRIssuer issues client identities on any cluster whose signers run in
// kube-controller-manager (kubeadm, kind): it creates a
// CertificateSigningRequest, approves it with the admin identity and waits
// for the certificate. Nodes get the kubelet client signer
// (kubernetes.io/kube-apiserver-client-kubelet), so they act as
// system:node:<name> under the Node authorizer and NodeRestriction;
// other users the generic client signer.
type CSRIssuer struct {
	Admin *rest.Config
	// Timeout bounds the wait for a certificate; default 1m.
	Timeout time.Duration
	// Validity is how long an issued certificate is valid: the CSR's
	// spec.expirationSeconds (the signer may cap it; the API accepts
	// MinCSRValidity at least). Default DefaultCSRValidity.
	Validity time.Duration
	// Labels go on every CertificateSigningRequest (the run's label, so a
	// request a crash left behind is found by 'bootproof cleanup'); set
	// them before the first identity is issued.
	Labels map[string]string

	mu    sync.Mutex
	cache map[string]*rest.Config
}

// Lifetimes of CSR-issued certificates. A run's identities need to last
// the run, not the signer's default of a year: a day covers a catalog
// run with a wide margin; a longer soak sets Validity.
const (
	DefaultCSRValidity = 24 * time.Hour
	MinCSRValidity     = 10 * time.Minute
)

// NodeRESTConfig implements CredentialIssuer.
func (c *CSRIssuer) NodeRESTConfig(node string) (*rest.Config, error) {
	return c.issue("system:node:"+node, []string{"system:nodes"}, certificatesv1.KubeAPIServerClientKubeletSignerName)
}

// approve approves the latest version of the request, once: another
// controller may write it between our reads (kind's
// kube-controller-manager runs csrapproving).
func approve(ctx context.Context, cs kubernetes.Interface, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range latest.Status.Conditions {
			if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		latest.Status.Conditions = append(latest.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "BootproofApproved",
			Message: "bootproof issues identities for its simulated nodes and subjects"})
		_, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, latest.Name, latest, metav1.UpdateOptions{})
		return err
	})
}

// UserRESTConfig implements CredentialIssuer.
func (c *CSRIssuer) UserRESTConfig(user string, groups ...string) (*rest.Config, error) {
	return c.issue(user, groups, certificatesv1.KubeAPIServerClientSignerName)
}

func (c *CSRIssuer) issue(user string, groups []string, signer string) (*rest.Config, error) {
	key := signer + "/" + user
	c.mu.Lock()
	if rc, ok := c.cache[key]; ok {
		c.mu.Unlock()
		return rest.CopyConfig(rc), nil
	}
	c.mu.Unlock()
	timeout := c.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(c.Admin)
	if err != nil {
		return nil, err
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key for %s: %w", user, err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: groups}}, priv)
	if err != nil {
		return nil, fmt.Errorf("certificate request for %s: %w", user, err)
	}
	csr := newCSR(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), signer, c.Validity)
	csr.Labels = c.Labels
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("certificate signing request for %s: %w", user, err)
	}
	defer func() {
		_ = cs.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	}()
	if err := approve(ctx, cs, created.Name); err != nil {
		return nil, fmt.Errorf("approve certificate signing request %s for %s: %w", created.Name, user, err)
	}
	var certPEM []byte
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed {
				return false, fmt.Errorf("%s: %s", cond.Type, cond.Message)
			}
		}
		certPEM = got.Status.Certificate
		return len(certPEM) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("certificate for %s from signer %s (does kube-controller-manager run its signing controller?): %w", user, signer, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	rc := rest.AnonymousClientConfig(c.Admin)
	rc.CertData = certPEM
	rc.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	rc.QPS, rc.Burst = 200, 400
	c.mu.Lock()
	if c.cache == nil {
		c.cache = map[string]*rest.Config{}
	}
	c.cache[key] = rc
	c.mu.Unlock()
	return rest.CopyConfig(rc), nil
}

// newCSR is the CertificateSigningRequest for request (PEM) to signer,
// asking for a certificate valid for validity (DefaultCSRValidity when
// zero, at least MinCSRValidity).
func newCSR(request []byte, signer string, validity time.Duration) *certificatesv1.CertificateSigningRequest {
	if validity == 0 {
		validity = DefaultCSRValidity
	}
	validity = max(validity, MinCSRValidity)
	seconds := int32(min(validity.Seconds(), math.MaxInt32))
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bootproof-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        signer,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: &seconds,
		},
	}
}
