//go:build tools

// Package etcd pins the etcd server bootproof builds for its embedded
// cluster. It is a module of its own because k8s.io/kubernetes v1.37 needs
// etcd v3.7 client libraries, while the server pinned here is v3.6.
package etcd

import (
	_ "go.etcd.io/etcd/server/v3"
)
