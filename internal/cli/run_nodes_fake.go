package cli

import (
	"context"

	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/scenarios"
)

// --nodes fake: simulated nodes (package fakes) in this process.
func init() {
	registerNodes(nodesFake, nodeProvider{
		grace: DefaultRunGrace,
		start: func(_ context.Context, _ *runContext, cl scenarios.Cluster, _ string, _ map[string]string) (scenarios.Backend, error) {
			return &backend.Fake{Cluster: cl}, nil
		},
	})
}
