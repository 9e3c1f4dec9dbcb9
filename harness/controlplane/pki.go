package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority held in memory. It signs the serving and
// client certificates of one embedded cluster.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is Cert, PEM-encoded.
	CertPEM []byte
	// validity is how long the certificates it issues are valid (never
	// past its own NotAfter).
	validity time.Duration
}

// KeyPair is a signed certificate and its private key, both PEM-encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// CertRequest describes a leaf certificate.
type CertRequest struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	// Server and Client select the extended key usages.
	Server bool
	Client bool
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// NewCA creates a self-signed certificate authority with the given name,
// valid for validity from now, as are the certificates it issues
// (Config.CertValidity for an embedded cluster).
func NewCA(name string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("CA %q: validity %s is not positive", name, validity)
	}
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generate key for CA %q: %w", name, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, fmt.Errorf("serial for CA %q: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %q: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA %q: %w", name, err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der), validity: validity}, nil
}

// Issue signs a new leaf certificate described by req.
func (ca *CA) Issue(req CertRequest) (*KeyPair, error) {
	if req.CommonName == "" {
		return nil, fmt.Errorf("issue certificate: common name is empty")
	}
	if !req.Server && !req.Client {
		return nil, fmt.Errorf("issue certificate %q: neither server nor client usage requested", req.CommonName)
	}
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generate key for %q: %w", req.CommonName, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, fmt.Errorf("serial for %q: %w", req.CommonName, err)
	}
	var usages []x509.ExtKeyUsage
	if req.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organizations},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     minTime(now.Add(ca.validity), ca.Cert.NotAfter),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %q: %w", req.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %q: %w", req.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key of %q: %w", req.CommonName, err)
	}
	return &KeyPair{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// WriteFiles writes the pair as <dir>/<name>.crt and <dir>/<name>.key (0600)
// and returns both paths.
func (kp *KeyPair) WriteFiles(dir, name string) (certPath, keyPath string, err error) {
	certPath, keyPath = keyPairPaths(dir, name)
	if err := kp.writeTo(certPath, keyPath); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// keyPairPaths are the paths WriteFiles writes a pair named name to.
func keyPairPaths(dir, name string) (certPath, keyPath string) {
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
}

// writeTo writes the certificate to certPath and the key to keyPath (0600).
func (kp *KeyPair) writeTo(certPath, keyPath string) error {
	if err := os.WriteFile(certPath, kp.CertPEM, 0o644); err != nil {
		return fmt.Errorf("write certificate: %w", err)
	}
	if err := os.WriteFile(keyPath, kp.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	return nil
}

// NewServiceAccountKey returns a PEM-encoded private key and its public key,
// used by kube-apiserver to sign and verify service-account tokens.
func NewServiceAccountKey() (keyPEM, pubPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, fmt.Errorf("generate service-account key: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encode service-account public key: %w", err)
	}
	return keyPEM, pemBlock("PUBLIC KEY", pub), nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
