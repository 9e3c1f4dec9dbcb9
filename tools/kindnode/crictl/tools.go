//go:build tools

// Package crictl pins crictl for the kind node image (kind's log export
// uses it).
package crictl

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
