// Command bootproof-runc-shim is the OCI runtime wrapper 'make deps-kind'
// registers with docker on a host that cannot grant every capability
// --privileged asks for (see internal/kindhost).
package main

import (
	"os"

	"github.com/bootproof/bootproof/internal/kindhost"
)

func main() { os.Exit(kindhost.ShimMain(os.Args)) }
