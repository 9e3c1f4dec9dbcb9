package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatalf("CA certificate is not a signing CA: IsCA=%v usage=%v", ca.Cert.IsCA, ca.Cert.KeyUsage)
	}
	other, err := NewCA("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		req       CertRequest
		usage     x509.ExtKeyUsage
		dnsName   string // verified as server name when set
		wantOrgs  []string
		wantIPs   []string
		wantUsage []x509.ExtKeyUsage
	}{
		{
			name:      "api server serving",
			req:       CertRequest{CommonName: "kube-apiserver", DNSNames: apiServerDNSNames, IPs: apiServerIPs(), Server: true},
			usage:     x509.ExtKeyUsageServerAuth,
			dnsName:   "kubernetes.default.svc",
			wantIPs:   []string{"127.0.0.1", GuestHostAddress, "10.0.0.1"},
			wantUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		},
		{
			name:      "node client",
			req:       CertRequest{CommonName: "system:node:n1", Organizations: []string{"system:nodes"}, Client: true},
			usage:     x509.ExtKeyUsageClientAuth,
			wantOrgs:  []string{"system:nodes"},
			wantUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		},
		{
			name:      "etcd server and peer",
			req:       CertRequest{CommonName: "etcd", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true},
			usage:     x509.ExtKeyUsageClientAuth,
			wantIPs:   []string{"127.0.0.1"},
			wantUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := ca.Issue(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.Cert)
			opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}, DNSName: tc.dnsName}
			if _, err := kp.Cert.Verify(opts); err != nil {
				t.Errorf("does not verify against its CA: %v", err)
			}
			wrong := x509.NewCertPool()
			wrong.AddCert(other.Cert)
			opts.Roots = wrong
			if _, err := kp.Cert.Verify(opts); err == nil {
				t.Errorf("verifies against an unrelated CA")
			}
			if kp.Cert.Subject.CommonName != tc.req.CommonName {
				t.Errorf("CN = %q, want %q", kp.Cert.Subject.CommonName, tc.req.CommonName)
			}
			if !slices.Equal(kp.Cert.Subject.Organization, tc.wantOrgs) {
				t.Errorf("O = %v, want %v", kp.Cert.Subject.Organization, tc.wantOrgs)
			}
			var ips []string
			for _, ip := range kp.Cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, tc.wantIPs) {
				t.Errorf("IP SANs = %v, want %v", ips, tc.wantIPs)
			}
			if !slices.Equal(kp.Cert.ExtKeyUsage, tc.wantUsage) {
				t.Errorf("ext key usage = %v, want %v", kp.Cert.ExtKeyUsage, tc.wantUsage)
			}
			if kp.Cert.IsCA {
				t.Errorf("leaf certificate is a CA")
			}
		})
	}
}

func TestIssueRejectsIncompleteRequests(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]CertRequest{
		"no common name": {Server: true},
		"no usage":       {CommonName: "x"},
	} {
		if _, err := ca.Issue(req); err == nil {
			t.Errorf("%s: Issue succeeded, want error", name)
		}
	}
}

// TestCertValidity: every certificate of an embedded cluster is valid for
// Config.CertValidity, and no leaf outlives its CA.
func TestCertValidity(t *testing.T) {
	dir := t.TempDir()
	f := pkiPaths(dir)
	cp := &ControlPlane{cfg: Config{CertValidity: 48 * time.Hour}}
	start := time.Now()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := cp.writePKI(f); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.ca, f.etcdCA, f.frontProxyCA, f.apiServingCert, f.kcmServingCert, f.etcdServerCert, f.apiEtcdClientCert, f.proxyClientCert} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if d := cert.NotAfter.Sub(start); d < 48*time.Hour-time.Minute || d > 48*time.Hour+time.Minute {
			t.Errorf("%s: valid for %s after start, want 48h", filepath.Base(p), d)
		}
	}
	admin, err := cp.ca.Issue(CertRequest{CommonName: "admin", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if admin.Cert.NotAfter.After(cp.ca.Cert.NotAfter) {
		t.Errorf("leaf valid until %s, past its CA's %s", admin.Cert.NotAfter, cp.ca.Cert.NotAfter)
	}
	if _, err := NewCA("x", 0); err == nil {
		t.Error("NewCA with zero validity succeeded")
	}
	if got := (Config{}).Default().CertValidity; got != DefaultCertValidity || got < 7*24*time.Hour {
		t.Errorf("default CertValidity %s, want a week", got)
	}
}
