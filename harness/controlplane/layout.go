package controlplane

import (
	"path/filepath"
	"strconv"
)

// portSet are the TCP ports the processes listen on, on 127.0.0.1.
type portSet struct {
	etcdClient, etcdPeer, apiServer, controllerManager int
}

// byName is the set as Ports reports it.
func (p portSet) byName() map[string]int {
	return map[string]int{"etcd-client": p.etcdClient, "etcd-peer": p.etcdPeer,
		BinKubeAPIServer: p.apiServer, BinKubeControllerManager: p.controllerManager}
}

// layout is where a control plane keeps its files and which ports its
// processes listen on. newLayout derives every path from the run
// directory; the ports are chosen at start. The processes' flags are
// rendered from it without starting anything (see args.go).
type layout struct {
	dir string // the run directory
	// etcdData is etcd's data directory, fresh at every start.
	etcdData string
	// adminKubeconfig is the cluster-admin kubeconfig.
	adminKubeconfig string
	// kcmKubeconfig is kube-controller-manager's kubeconfig.
	kcmKubeconfig string
	pki           pkiFiles
	ports         portSet
}

// newLayout lays out the run directory dir (an absolute path); the ports
// are left to set.
func newLayout(dir string) layout {
	return layout{
		dir:             dir,
		etcdData:        filepath.Join(dir, "etcd-data"),
		adminKubeconfig: filepath.Join(dir, "kubeconfig"),
		kcmKubeconfig:   filepath.Join(dir, "kube-controller-manager.kubeconfig"),
		pki:             pkiPaths(filepath.Join(dir, "pki")),
	}
}

// etcdURL is etcd's client URL.
func (l layout) etcdURL() string { return loopbackURL(l.ports.etcdClient) }

// etcdPeerURL is etcd's peer URL.
func (l layout) etcdPeerURL() string { return loopbackURL(l.ports.etcdPeer) }

// apiServerURL is kube-apiserver's URL.
func (l layout) apiServerURL() string { return loopbackURL(l.ports.apiServer) }

// controllerManagerURL is kube-controller-manager's (health) URL.
func (l layout) controllerManagerURL() string { return loopbackURL(l.ports.controllerManager) }

func loopbackURL(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) }
