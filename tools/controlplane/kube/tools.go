//go:build tools

// Package kube pins the Kubernetes control-plane binaries bootproof builds
// for its embedded cluster. It is its own module so that the main module
// stays free of k8s.io/kubernetes and of replace directives.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
