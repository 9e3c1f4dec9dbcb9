package controlplane

import "strconv"

// The flags each process starts with, from the configuration and the run
// directory's layout alone. Config.ExtraArgs are added after these when
// the process starts (spawnReady), so they win. testdata/*.args.golden
// holds them rendered for a fixed layout (go test -update rewrites them).

// etcdArgs are etcd's flags: TLS with client certificates from its own CA,
// so no identity of the cluster CA (nodes, admin) can reach it; only the
// API server holds an etcd client certificate.
func etcdArgs(l layout) []string {
	etcdURL, peerURL := l.etcdURL(), l.etcdPeerURL()
	return []string{
		"--name=bootproof",
		"--data-dir=" + l.etcdData,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=bootproof=" + peerURL,
		"--client-cert-auth",
		"--trusted-ca-file=" + l.pki.etcdCA,
		"--cert-file=" + l.pki.etcdServerCert,
		"--key-file=" + l.pki.etcdServerKey,
		"--peer-client-cert-auth",
		"--peer-trusted-ca-file=" + l.pki.etcdCA,
		"--peer-cert-file=" + l.pki.etcdServerCert,
		"--peer-key-file=" + l.pki.etcdServerKey,
		// The data lives for one run; fsync only slows every heartbeat.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

// apiServerArgs are kube-apiserver's flags: loopback only, RBAC with the
// Node authorizer and NodeRestriction.
func apiServerArgs(l layout) []string {
	return []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.ports.apiServer),
		"--etcd-servers=" + l.etcdURL(),
		"--etcd-cafile=" + l.pki.etcdCA,
		"--etcd-certfile=" + l.pki.apiEtcdClientCert,
		"--etcd-keyfile=" + l.pki.apiEtcdClientKey,
		"--tls-cert-file=" + l.pki.apiServingCert,
		"--tls-private-key-file=" + l.pki.apiServingKey,
		"--client-ca-file=" + l.pki.ca,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + l.pki.saPub,
		"--service-account-signing-key-file=" + l.pki.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--profiling=false",
		"--endpoint-reconciler-type=none",
		// The aggregation layer's request-header identity, as kubeadm sets
		// it; without it every client of the API logs a missing CA bundle.
		"--requestheader-client-ca-file=" + l.pki.frontProxyCA,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + l.pki.proxyClientCert,
		"--proxy-client-key-file=" + l.pki.proxyClientKey,
	}
}

// controllerManagerArgs are kube-controller-manager's flags: the
// controllers, grace and monitor periods of cfg (a defaulted, valid
// Config), signing with the cluster CA.
func controllerManagerArgs(cfg Config, l layout) []string {
	return []string{
		"--kubeconfig=" + l.kcmKubeconfig,
		"--authentication-kubeconfig=" + l.kcmKubeconfig,
		"--authorization-kubeconfig=" + l.kcmKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.ports.controllerManager),
		"--tls-cert-file=" + l.pki.kcmServingCert,
		"--tls-private-key-file=" + l.pki.kcmServingKey,
		"--client-ca-file=" + l.pki.ca,
		"--root-ca-file=" + l.pki.ca,
		"--service-account-private-key-file=" + l.pki.saKey,
		"--cluster-signing-cert-file=" + l.pki.ca,
		"--cluster-signing-key-file=" + l.pki.caKey,
		"--use-service-account-credentials=true",
		// Leader election as kubeadm runs it: the harness watches the
		// leader Lease's renewals on every cluster, this one included.
		"--leader-elect=true",
		"--controllers=" + cfg.controllersFlag(),
		"--node-monitor-grace-period=" + cfg.GracePeriod.String(),
		"--node-monitor-period=" + cfg.MonitorPeriod.String(),
		"--kube-api-qps=" + strconv.FormatFloat(float64(cfg.ControllerManagerQPS), 'f', -1, 32),
		"--kube-api-burst=" + strconv.Itoa(cfg.ControllerManagerBurst),
		"--profiling=false",
	}
}
