//go:build tools

// Package kwok pins sigs.k8s.io/kwok, the simulated-node tool 'make
// bench-fleet' measures bootproof's fleet against (bin/kwok, built by
// tools/build.sh kwok kwok sigs.k8s.io/kwok/cmd/kwok). It is a module of its
// own so the main module does not depend on it.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
