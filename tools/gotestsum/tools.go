//go:build tools

// Package gotestsum pins gotest.tools/gotestsum, which turns 'go test -json'
// into JUnit XML for the packages that are not Ginkgo suites (make test,
// make e2e-libvirt). It is a module of its own so the main module does not
// depend on it.
package gotestsum

import (
	_ "gotest.tools/gotestsum"
)
