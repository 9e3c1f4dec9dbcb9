package controlplane

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pkiFiles are the paths of the certificates and keys the processes read.
type pkiFiles struct {
	ca, caKey                           string
	etcdCA                              string
	etcdServerCert, etcdServerKey       string
	apiEtcdClientCert, apiEtcdClientKey string
	apiServingCert, apiServingKey       string
	kcmServingCert, kcmServingKey       string
	saKey, saPub                        string
	frontProxyCA                        string
	proxyClientCert, proxyClientKey     string
}

// pkiPaths names every PKI file under dir (the run directory's pki/).
func pkiPaths(dir string) pkiFiles {
	f := pkiFiles{
		ca:           filepath.Join(dir, "ca.crt"),
		caKey:        filepath.Join(dir, "ca.key"),
		etcdCA:       filepath.Join(dir, "etcd-ca.crt"),
		frontProxyCA: filepath.Join(dir, "front-proxy-ca.crt"),
		saKey:        filepath.Join(dir, "sa.key"),
		saPub:        filepath.Join(dir, "sa.pub"),
	}
	f.proxyClientCert, f.proxyClientKey = keyPairPaths(dir, "front-proxy-client")
	f.etcdServerCert, f.etcdServerKey = keyPairPaths(dir, "etcd-server")
	f.apiEtcdClientCert, f.apiEtcdClientKey = keyPairPaths(dir, "apiserver-etcd-client")
	f.apiServingCert, f.apiServingKey = keyPairPaths(dir, "apiserver")
	f.kcmServingCert, f.kcmServingKey = keyPairPaths(dir, "kube-controller-manager")
	return f
}

// apiServerSANs are the names the API server's certificate covers: loopback,
// the in-cluster service names, and the host as seen from a QEMU guest.
var apiServerDNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}

func apiServerIPs() []net.IP {
	return []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(GuestHostAddress), net.ParseIP("10.0.0.1")}
}

// writePKI creates the cluster CA, a separate etcd CA and every
// certificate the processes need, at the paths f names.
func (cp *ControlPlane) writePKI(f pkiFiles) error {
	var err error
	if cp.ca, err = NewCA("bootproof-ca", cp.cfg.CertValidity); err != nil {
		return err
	}
	if cp.etcdCA, err = NewCA("bootproof-etcd-ca", cp.cfg.CertValidity); err != nil {
		return err
	}
	if err := os.WriteFile(f.ca, cp.ca.CertPEM, 0o644); err != nil {
		return fmt.Errorf("write CA: %w", err)
	}
	caKey, err := x509.MarshalPKCS8PrivateKey(cp.ca.Key)
	if err != nil {
		return fmt.Errorf("encode CA key: %w", err)
	}
	// kube-controller-manager signs approved CertificateSigningRequests
	// with the cluster CA, as kubeadm clusters do.
	if err := os.WriteFile(f.caKey, pemBlock("PRIVATE KEY", caKey), 0o600); err != nil {
		return fmt.Errorf("write CA key: %w", err)
	}
	if err := os.WriteFile(f.etcdCA, cp.etcdCA.CertPEM, 0o644); err != nil {
		return fmt.Errorf("write etcd CA: %w", err)
	}
	loop := []net.IP{net.ParseIP("127.0.0.1")}
	issue := func(ca *CA, req CertRequest, cert, key string) error {
		kp, err := ca.Issue(req)
		if err != nil {
			return err
		}
		return kp.writeTo(cert, key)
	}
	frontProxyCA, err := NewCA("bootproof-front-proxy-ca", cp.cfg.CertValidity)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.frontProxyCA, frontProxyCA.CertPEM, 0o644); err != nil {
		return fmt.Errorf("write front-proxy CA: %w", err)
	}
	steps := []error{
		issue(frontProxyCA, CertRequest{CommonName: "front-proxy-client", Client: true}, f.proxyClientCert, f.proxyClientKey),
		issue(cp.etcdCA, CertRequest{CommonName: "etcd", DNSNames: []string{"localhost"}, IPs: loop, Server: true, Client: true}, f.etcdServerCert, f.etcdServerKey),
		issue(cp.etcdCA, CertRequest{CommonName: "kube-apiserver-etcd-client", Client: true}, f.apiEtcdClientCert, f.apiEtcdClientKey),
		issue(cp.ca, CertRequest{CommonName: "kube-apiserver", DNSNames: apiServerDNSNames, IPs: apiServerIPs(), Server: true}, f.apiServingCert, f.apiServingKey),
		issue(cp.ca, CertRequest{CommonName: "kube-controller-manager", DNSNames: []string{"localhost"}, IPs: loop, Server: true}, f.kcmServingCert, f.kcmServingKey),
	}
	for _, err := range steps {
		if err != nil {
			return fmt.Errorf("write PKI: %w", err)
		}
	}
	keyPEM, pubPEM, err := NewServiceAccountKey()
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.saKey, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write service-account key: %w", err)
	}
	if err := os.WriteFile(f.saPub, pubPEM, 0o644); err != nil {
		return fmt.Errorf("write service-account key: %w", err)
	}
	return nil
}

// writeKubeconfig writes a self-contained kubeconfig (certificates inline)
// with mode 0600.
func writeKubeconfig(path, server, user string, caPEM []byte, kp *KeyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bootproof"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["bootproof"] = &clientcmdapi.Context{Cluster: "bootproof", AuthInfo: user}
	cfg.CurrentContext = "bootproof"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

func restConfig(server string, caPEM []byte, kp *KeyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: kp.CertPEM,
			KeyData:  kp.KeyPEM,
		},
		// Fleets of simulated nodes share a process; throttling in the
		// client would delay heartbeats, so the defaults are generous.
		QPS:   200,
		Burst: 400,
	}
}
