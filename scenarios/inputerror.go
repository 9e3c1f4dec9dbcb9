package scenarios

import "fmt"

// InputError is a value a caller gave a library (a cluster provider, the
// catalog, a backend) that it cannot use. Field names the parameter the
// way the library knows it (Kubeconfig, GracePeriod, Scenario, ...); a
// command line maps it to its flag with Render, so libraries never write
// flag names.
type InputError struct {
	// Field is the parameter.
	Field string
	// Value is the value given; empty when the parameter is missing.
	Value string
	// Reason says what is wrong and what would be accepted.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *InputError) Error() string { return e.Render(e.Field) }

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

// Render writes the error with name for the parameter (a flag such as
// --kubeconfig, or the field name).
func (e *InputError) Render(name string) string {
	switch {
	case e.Err != nil && e.Reason != "":
		return fmt.Sprintf("%s %s: %v (%s)", name, e.Value, e.Err, e.Reason)
	case e.Err != nil:
		return fmt.Sprintf("%s %s: %v", name, e.Value, e.Err)
	case e.Value == "":
		return fmt.Sprintf("%s: %s", name, e.Reason)
	default:
		return fmt.Sprintf("invalid %s %s: %s", name, e.Value, e.Reason)
	}
}
