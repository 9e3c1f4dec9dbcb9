// Command bootproof-agent is the /init of a bootproof VM. Build it static:
// CGO_ENABLED=0 go build ./cmd/bootproof-agent. See package
// github.com/bootproof/bootproof/vmprovision/agent.
package main

import (
	"os"

	"github.com/bootproof/bootproof/vmprovision/agent"
)

func main() { os.Exit(agent.Main(os.Args[1:])) }
