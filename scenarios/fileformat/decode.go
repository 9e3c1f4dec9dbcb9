package fileformat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FieldError is a decoding error at a line of an input file.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
	// Column of the offending value, when known: it finds the field
	// among several on one line ({a: 1, b: x}).
	Column int
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// DecodeStrict decodes one YAML document into v: unknown fields, wrong
// types, a FieldError from a field's own UnmarshalYAML and a second
// document are errors naming file, line and field (a *FieldError). It returns the document's
// node, for the lines of later validation errors (see FieldLine).
func DecodeStrict(file string, data []byte, v any) (*yaml.Node, error) {
	doc, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	if err := decodeInto(file, data, doc, v); err != nil {
		return nil, err
	}
	return doc, nil
}

// parseDocument returns the node of data's first YAML document.
func parseDocument(file string, data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, wrapYAML(file, err)
	}
	if len(root.Content) == 0 {
		return nil, &FieldError{File: file, Msg: "empty document"}
	}
	return root.Content[0], nil
}

// decodeInto decodes data, whose first document is doc, into v strictly
// (see DecodeStrict).
func decodeInto(file string, data []byte, doc *yaml.Node, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		err := wrapYAML(file, err)
		var fe *FieldError
		switch {
		case !errors.As(err, &fe) || fe.Line == 0:
		case fe.Field == "":
			fe.Field = keyAtLine(doc, fe.Line, fe.Column, "")
		default:
			// An unknown key: its full path (yaml.v3 names only the key).
			if p := keyPath(doc, fe.Line, fe.Field, ""); p != "" {
				fe.Field = p
			}
		}
		return err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return wrapYAML(file, err)
	default:
		return &FieldError{File: file, Line: max(next.Line, 1), Msg: "a second YAML document (after ---): a file holds one document; put each in a file of its own"}
	}
	return nil
}

// FieldLine returns the line of the mapping key at path (e.g. "exec",
// "command") in a document DecodeStrict returned; 0 when absent.
func FieldLine(doc *yaml.Node, path ...string) int {
	line := 0
	for _, key := range path {
		if doc == nil || doc.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == key {
				line, next = doc.Content[i].Line, doc.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		doc = next
	}
	return line
}

// WithFile names file, and the field err was found under (prefixed to a
// FieldError's own field), on err: a *FieldError.
func WithFile(file, field string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		c := *fe
		c.File = file
		if c.Field == "" {
			c.Field = field
		} else if field != "" {
			c.Field = field + "." + c.Field
		}
		return &c
	}
	return &FieldError{File: file, Field: field, Msg: err.Error()}
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// wrapYAML turns yaml.v3's errors ("line 3: field x not found in type ...")
// into FieldErrors with the line and the field.
func wrapYAML(file string, err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return WithFile(file, "", fe)
	}
	out := &FieldError{File: file, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		out.Line, _ = strconv.Atoi(m[1])
		out.Msg = m[2]
		if f := regexp.MustCompile(`field (\S+) not found`).FindStringSubmatch(m[2]); f != nil {
			out.Field = f[1]
			out.Msg = "unknown field"
		}
	}
	return out
}

// keyAtLine returns the path of the mapping key whose value starts at
// line (and column, when not 0).
func keyAtLine(n *yaml.Node, line, column int, prefix string) string {
	return findPath(n, prefix, true, func(k, v *yaml.Node) bool {
		if column > 0 && (v.Line != line || v.Column != column) {
			return false
		}
		return v.Line == line && (v.Kind == yaml.ScalarNode || k.Line == line)
	})
}

// keyPath returns the path of the mapping key named key at line.
func keyPath(n *yaml.Node, line int, key, prefix string) string {
	return findPath(n, prefix, false, func(k, _ *yaml.Node) bool { return k.Line == line && k.Value == key })
}

// findPath walks n depth-first and returns the path (a.b[0].c) of the
// first mapping entry match accepts; with childFirst an entry's value is
// searched before the entry itself is tried.
func findPath(n *yaml.Node, prefix string, childFirst bool, match func(k, v *yaml.Node) bool) string {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if !childFirst && match(k, v) {
				return path
			}
			if p := findPath(v, path, childFirst, match); p != "" {
				return p
			}
			if childFirst && match(k, v) {
				return path
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p := findPath(c, fmt.Sprintf("%s[%d]", prefix, i), childFirst, match); p != "" {
				return p
			}
		}
	}
	return ""
}
