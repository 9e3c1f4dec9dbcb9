//go:build tools

// Package kube pins the Kubernetes binaries bootproof builds: the control
// plane of its embedded cluster (kube-apiserver, kube-controller-manager)
// and, for its kind node image, the rest of a node and its control plane
// (kube-scheduler, kube-proxy, kubelet, kubeadm, kubectl;
// tools/kindnode/build.sh). It is its own module so that the main module
// stays free of k8s.io/kubernetes and of replace directives.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
