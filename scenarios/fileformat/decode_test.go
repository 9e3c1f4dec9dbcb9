package fileformat

import (
	"errors"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/contract"
	"go.yaml.in/yaml/v3"
)

type port int

// UnmarshalYAML reports a bad value as a FieldError at its node, as the
// types of scenario and subject files do.
func (p *port) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "http" {
		*p = 80
		return nil
	}
	return &FieldError{Line: n.Line, Column: n.Column, Msg: "want http"}
}

type server struct {
	Header `yaml:",inline"`
	Name   string `yaml:"name"`
	Listen struct {
		Port port `yaml:"port"`
	} `yaml:"listen"`
}

// Every error of the strict decoder is a FieldError naming the file, the
// line and the field path; a good document decodes.
func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       FieldError // zero: no error
	}{
		{name: "good", data: "name: a\nlisten:\n  port: http\n"},
		{name: "unknown nested field", data: "name: a\nlisten:\n  port: http\n  host: x\n",
			want: FieldError{File: "f.yaml", Line: 4, Field: "listen.host"}},
		{name: "wrong type", data: "name: [a]\n", want: FieldError{File: "f.yaml", Line: 1, Field: "name"}},
		{name: "a value's own error", data: "name: a\nlisten: {port: ftp}\n", want: FieldError{File: "f.yaml", Line: 2, Field: "listen.port", Msg: "want http"}},
		{name: "second document", data: "name: a\n---\nname: b\n", want: FieldError{File: "f.yaml", Line: 2, Msg: "a second YAML document"}},
		{name: "empty", data: "", want: FieldError{File: "f.yaml", Msg: "empty document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s server
			_, err := DecodeStrict("f.yaml", []byte(tc.data), &s)
			if tc.want == (FieldError{}) {
				if err != nil || s.Name != "a" || s.Listen.Port != 80 {
					t.Fatalf("decoded %+v, %v", s, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want a *FieldError", err, err)
			}
			if fe.File != tc.want.File || fe.Line != tc.want.Line || fe.Field != tc.want.Field || !strings.Contains(fe.Msg, tc.want.Msg) {
				t.Errorf("error %#v, want %#v", fe, tc.want)
			}
		})
	}
}

// A versioned file checks its header first; one without it decodes with
// the deprecation warning.
func TestDecodeVersioned(t *testing.T) {
	var s server
	_, warnings, err := DecodeVersioned("f.yaml", []byte("name: a\nlisten: {port: http}\n"), contract.KindSubject, &s)
	if err != nil || len(warnings) != 1 || warnings[0] != DeprecationWarning("f.yaml", contract.KindSubject) {
		t.Errorf("no header: %v, %v", warnings, err)
	}
	_, _, err = DecodeVersioned("f.yaml", []byte("apiVersion: bootproof.dev/v9\nkind: Subject\nname: a\n"), contract.KindSubject, &s)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "apiVersion" || fe.Line != 1 || !strings.Contains(fe.Msg, contract.CurrentAPIVersion) {
		t.Errorf("unknown version: %v", err)
	}
	_, warnings, err = DecodeVersioned("f.yaml", []byte("apiVersion: "+contract.CurrentAPIVersion+"\nkind: Subject\nname: a\nlisten: {port: http}\n"), contract.KindSubject, &s)
	if err != nil || len(warnings) != 0 || s.APIVersion != contract.CurrentAPIVersion {
		t.Errorf("current version: %+v %v %v", s.Header, warnings, err)
	}
}
