// Package cli is the bootproof command line: cobra commands that map flags
// to library calls in the harness packages and nothing more. Run is the
// testable entry point; cmd/bootproof's main only calls Main.
//
// Exit codes: 0 success, 1 a verdict failed, 2 a usage error or an
// infrastructure fault.
package cli
