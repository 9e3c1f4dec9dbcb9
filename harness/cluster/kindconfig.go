package cluster

import (
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/harness/controlplane"
)

// kubeadm v1beta4 (Kubernetes 1.31+) takes extraArgs as a list.
type kubeadmArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type kubeadmClusterConfiguration struct {
	Kind              string `json:"kind"`
	ControllerManager struct {
		ExtraArgs []kubeadmArg `json:"extraArgs"`
	} `json:"controllerManager"`
	Etcd struct {
		Local struct {
			ImageTag  string       `json:"imageTag,omitempty"`
			ExtraArgs []kubeadmArg `json:"extraArgs"`
		} `json:"local"`
	} `json:"etcd"`
}

// kubeadmInitConfiguration is kubeadm init's configuration patch: the
// phases it skips. kind's merge patch replaces the whole list, so it keeps
// kind's own "preflight" (kind pre-loads the images preflight would pull).
type kubeadmInitConfiguration struct {
	Kind       string   `json:"kind"`
	SkipPhases []string `json:"skipPhases"`
}

// kubeletConfiguration is the kubelet's configuration patch on a cgroup
// v1 host.
type kubeletConfiguration struct {
	APIVersion   string `json:"apiVersion"`
	Kind         string `json:"kind"`
	FailCgroupV1 bool   `json:"failCgroupV1"`
}

type kindNode struct {
	Role  string `json:"role"`
	Image string `json:"image"`
}

type kindClusterConfig struct {
	Kind                    string     `json:"kind"`
	APIVersion              string     `json:"apiVersion"`
	Name                    string     `json:"name"`
	Nodes                   []kindNode `json:"nodes"`
	KubeadmConfigPatches    []string   `json:"kubeadmConfigPatches"`
	ContainerdConfigPatches []string   `json:"containerdConfigPatches,omitempty"`
}

// restrictOOMScoreAdjPatch is the node containerd's configuration patch
// (kind's config.toml is containerd's version 2 format).
const restrictOOMScoreAdjPatch = `[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
`

// KindClusterConfig renders the kind cluster configuration: one
// control-plane node of the pinned image, a kubeadm patch that sets
// kube-controller-manager's grace and monitor periods and client limits, and etcd's
// --unsafe-no-fsync (and the node image's etcd tag, EtcdImageTag), one that skips the kubeadm phases SkipPhases names
// (the addons a node image of bootproof's lacks), on a cgroup v1
// host one that lets the kubelet run there, and on a host without
// CAP_SYS_RESOURCE a containerd patch that keeps pods' OOM score
// adjustments within what the node may set.
func KindClusterConfig(cfg KindConfig) ([]byte, error) {
	cfg = cfg.defaults()
	var kc kubeadmClusterConfiguration
	kc.Kind = "ClusterConfiguration"
	kc.ControllerManager.ExtraArgs = []kubeadmArg{
		{Name: "node-monitor-grace-period", Value: cfg.GracePeriod.String()},
		{Name: "node-monitor-period", Value: cfg.MonitorPeriod.String()},
		// As on the embedded plane (controlplane.DefaultControllerManagerQPS
		// says why): the simulated nodes joined in one second must not wait
		// for the node lifecycle controller's rate limiter to lose their
		// not-ready taint.
		{Name: "kube-api-qps", Value: strconv.Itoa(controlplane.DefaultControllerManagerQPS)},
		{Name: "kube-api-burst", Value: strconv.Itoa(controlplane.DefaultControllerManagerBurst)},
	}
	// The cluster lives for one run, as the embedded one does: fsync on
	// the node container's overlay only stalls etcd (and with it the API
	// server's readiness and the controller manager's leader Lease).
	kc.Etcd.Local.ExtraArgs = []kubeadmArg{{Name: "unsafe-no-fsync", Value: "true"}}
	kc.Etcd.Local.ImageTag = cfg.EtcdImageTag
	patch, err := yaml.Marshal(kc)
	if err != nil {
		return nil, err
	}
	patches := []string{string(patch)}
	if len(cfg.SkipPhases) > 0 {
		initPatch, err := yaml.Marshal(kubeadmInitConfiguration{Kind: "InitConfiguration", SkipPhases: append([]string{"preflight"}, cfg.SkipPhases...)})
		if err != nil {
			return nil, err
		}
		patches = append(patches, string(initPatch))
	}
	if *cfg.CgroupV1 {
		kubelet, err := yaml.Marshal(kubeletConfiguration{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration", FailCgroupV1: false})
		if err != nil {
			return nil, err
		}
		patches = append(patches, string(kubelet))
	}
	kc2 := kindClusterConfig{
		Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4", Name: cfg.Name,
		Nodes:                []kindNode{{Role: "control-plane", Image: cfg.Image}},
		KubeadmConfigPatches: patches,
	}
	if *cfg.RestrictOOMScoreAdj {
		kc2.ContainerdConfigPatches = []string{restrictOOMScoreAdjPatch}
	}
	return yaml.Marshal(kc2)
}
