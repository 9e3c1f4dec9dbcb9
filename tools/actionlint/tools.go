//go:build tools

// Package actionlint pins github.com/rhysd/actionlint, which 'make verify'
// runs on .github/workflows. It is a module of its own so the main module
// does not depend on it.
package actionlint

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
