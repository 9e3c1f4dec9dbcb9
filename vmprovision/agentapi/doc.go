// Package agentapi is the wire contract between the two sides of a
// bootproof VM: the host (package vmprovision, which drives the VM) and
// the guest agent (package vmprovision/agent, built as
// cmd/bootproof-agent), which serves a small HTTP control API on the
// guest's control port. It holds the API's paths and query parameters
// and the JSON the agent answers, so both sides compile against one
// definition and a renamed field or path changes on both at once.
//
// It depends on the standard library only, so the static guest binary
// and any client can import it without pulling in the host's
// dependencies.
package agentapi
