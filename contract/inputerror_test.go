package contract_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bootproof/bootproof/contract"
)

func TestInputErrorRender(t *testing.T) {
	cause := errors.New("no such file")
	tests := []struct {
		err        *contract.InputError
		flag, want string
	}{
		{contract.NewInputError("Kubeconfig", "/x", "", cause), "--kubeconfig", "--kubeconfig /x: no such file"},
		{contract.NewInputError("Kubeconfig", "/x", "did it answer?", cause), "--kubeconfig", "--kubeconfig /x: no such file (did it answer?)"},
		{contract.NewInputError("ControlSocket", "", "none found", nil), "--control-socket", "--control-socket: none found"},
		{&contract.InputError{Field: field.NewPath("Scenario").Index(2), Value: `"x*"`, Reason: "matches none"}, "--scenario", `invalid --scenario "x*": matches none`},
	}
	for _, tc := range tests {
		if got := tc.err.Render(tc.flag); got != tc.want {
			t.Errorf("Render(%s) = %q, want %q", tc.flag, got, tc.want)
		}
		if got, want := tc.err.Error(), tc.err.Render(tc.err.FieldPath().String()); got != want {
			t.Errorf("Error() = %q, want the field path's rendering %q", got, want)
		}
	}
	if !errors.Is(tests[0].err, cause) {
		t.Error("InputError does not unwrap to its cause")
	}
}
