package contract

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldError is a typed error about one parameter a caller gave a
// library, named by a field path in the library's own terms (Kubeconfig,
// GracePeriod, WorkerNamespaces[1]). A command line finds it in an error
// chain with errors.As, maps the path's root to the flag that sets it and
// renders the error with Render; libraries never write flag names, and
// no one rewrites error text. InputError implements it, as do the
// configuration errors of the control plane and of package kmm.
type FieldError interface {
	error
	// FieldPath is the parameter.
	FieldPath() *field.Path
	// Render writes the error with name for the parameter (a flag such
	// as --kubeconfig, or the path itself).
	Render(name string) string
}

// InputError is a value a caller gave a library (a cluster provider, the
// catalog, a backend, the fleet's control socket) that it cannot use.
type InputError struct {
	// Field is the parameter.
	Field *field.Path
	// Value is the value given; empty when the parameter is missing.
	Value string
	// Reason says what is wrong and what would be accepted.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

var _ FieldError = (*InputError)(nil)

// NewInputError returns an InputError about the parameter name.
func NewInputError(name, value, reason string, err error) *InputError {
	return &InputError{Field: field.NewPath(name), Value: value, Reason: reason, Err: err}
}

func (e *InputError) Error() string { return e.Render(e.Field.String()) }

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

// FieldPath implements FieldError.
func (e *InputError) FieldPath() *field.Path { return e.Field }

// Render implements FieldError.
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
