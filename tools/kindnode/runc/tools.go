//go:build tools

// Package runc pins the kind node's OCI runtime: the runc version kind
// v0.33.0's base image builds.
package runc

import (
	_ "github.com/opencontainers/runc"
)
