//go:build tools

// Package golangci pins github.com/golangci/golangci-lint/v2, which
// 'make verify' runs with .golangci.yaml (linters, and the depguard rules
// that encode the dependency directions of docs/architecture.md). It is a
// module of its own so the main module does not depend on it.
package golangci

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
