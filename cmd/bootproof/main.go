// Command bootproof is the reboot-conformance harness's command line. See
// package github.com/bootproof/bootproof/internal/cli.
package main

import (
	"os"

	"github.com/bootproof/bootproof/internal/cli"
)

func main() { os.Exit(cli.Main()) }
