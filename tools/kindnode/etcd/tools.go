//go:build tools

// Package etcd pins the etcd server of the kind node image: the version
// kubeadm v1.37 asks for (registry.k8s.io/etcd:3.7.0-0).
package etcd

import (
	_ "go.etcd.io/etcd/server/v3"
)
