//go:build tools

// Package controllertools pins sigs.k8s.io/controller-tools, whose
// controller-gen generates the deepcopy code and the CRD YAML of
// kmm/api. It is its own module so that the main module does not depend
// on the generator and its dependencies.
package controllertools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
