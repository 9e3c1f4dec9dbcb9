package scenarios_test

import (
	"fmt"

	"github.com/bootproof/bootproof/scenarios"
)

// A scenario file: one fast reboot of one node, the module reloaded in
// the new boot.
func ExampleDecode() {
	s, err := scenarios.Decode("fast.yaml", []byte(`apiVersion: bootproof.dev/v1alpha1
kind: Scenario
name: my-fast-reboot
nodes: 1
modules: [{name: dummy}]
precondition: fast
expect: {bootid: pass, legacy: "fail:reload"}
actions:
  - wait-reloaded: {}
  - reboot: {downtime: 0.5g}
  - wait-reloaded: {}
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name, s.Nodes, s.Precondition, len(s.Actions), s.Expect["legacy"])
	for _, a := range s.Actions {
		fmt.Println(a.Kind)
	}
	// Output:
	// my-fast-reboot 1 fast 3 fail:reload
	// wait-reloaded
	// reboot
	// wait-reloaded
}

// A mistake is refused with the file, line and field, and what would be
// accepted.
func ExampleDecode_badInput() {
	_, err := scenarios.Decode("fast.yaml", []byte(`apiVersion: bootproof.dev/v1alpha1
kind: Scenario
name: my-fast-reboot
nodes: 1
modules: [{name: dummy}]
precondition: quick
expect: {bootid: pass}
actions:
  - reboot: {downtime: 0.5g}
`))
	fmt.Println(err)
	// Output:
	// fast.yaml:6: field precondition: "quick": accepted: fast, slow, recorded
}

// The catalog is embedded; Select picks scenarios by name (globs) or
// label.
func ExampleSelect() {
	all, err := scenarios.Catalog()
	if err != nil {
		panic(err)
	}
	picked, err := scenarios.Select(all, []string{"fast-reboot-*"}, nil)
	if err != nil {
		panic(err)
	}
	for _, s := range picked {
		fmt.Println(s.Name, s.Precondition)
	}
	// Output:
	// fast-reboot-0.1g fast
	// fast-reboot-0.5g fast
	// fast-reboot-0.8g fast
}
