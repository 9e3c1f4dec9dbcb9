package controlplane

import (
	"crypto/x509"
	"net"
	"slices"
	"testing"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatalf("CA certificate is not a signing CA: IsCA=%v usage=%v", ca.Cert.IsCA, ca.Cert.KeyUsage)
	}
	other, err := NewCA("other-ca")
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
	ca, err := NewCA("test-ca")
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
