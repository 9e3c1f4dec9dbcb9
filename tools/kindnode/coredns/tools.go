//go:build tools

// Package coredns pins CoreDNS for the kind node image: the version kubeadm
// v1.37 deploys (registry.k8s.io/coredns/coredns:v1.14.6).
package coredns

import (
	_ "github.com/coredns/coredns"
)
