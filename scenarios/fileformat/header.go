package fileformat

import (
	"fmt"
	"strings"

	"github.com/bootproof/bootproof/contract"
	"go.yaml.in/yaml/v3"
)

// Header is the apiVersion and kind at the top of a versioned bootproof
// file (contract.APIVersions, contract.FileKind). A type DecodeVersioned
// decodes into embeds it inline (`yaml:",inline"`), so that the strict
// decoder accepts the two keys.
type Header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

// DecodeVersioned decodes one file of the given kind into v: it checks the
// file's apiVersion and kind, then decodes it with DecodeStrict (v embeds
// Header). A version the decoder does not know, another kind, or only one
// of the two fields is a *FieldError naming the file, line and field. A
// file without either still decodes, deprecated: warnings then holds one
// line naming the file and the two lines to add. It returns the
// document's node, as DecodeStrict does.
func DecodeVersioned(file string, data []byte, kind contract.FileKind, v any) (doc *yaml.Node, warnings []string, err error) {
	doc, err = parseDocument(file, data)
	if err != nil {
		return nil, nil, err
	}
	warning, err := checkHeader(file, doc, kind)
	if err != nil {
		return nil, nil, err
	}
	if err := decodeInto(file, data, doc, v); err != nil {
		return nil, nil, err
	}
	if warning != "" {
		warnings = []string{warning}
	}
	return doc, warnings, nil
}

// DeprecationWarning is the warning of a file of kind without apiVersion
// and kind.
func DeprecationWarning(file string, kind contract.FileKind) string {
	return fmt.Sprintf("%s: no apiVersion/kind: add %q and %q at the top; files without them are deprecated",
		file, "apiVersion: "+contract.CurrentAPIVersion, "kind: "+string(kind))
}

// checkHeader checks the apiVersion and kind of doc, a file of kind; it
// returns the deprecation warning of a file that has neither. A document
// that is not a mapping is left to the decoder.
func checkHeader(file string, doc *yaml.Node, kind contract.FileKind) (string, error) {
	if doc.Kind != yaml.MappingNode {
		return "", nil
	}
	version, kindNode := topLevel(doc, "apiVersion"), topLevel(doc, "kind")
	bad := func(field string, n *yaml.Node, msg string) error {
		return &FieldError{File: file, Line: n.Line, Field: field, Msg: msg}
	}
	switch {
	case version == nil && kindNode == nil:
		return DeprecationWarning(file, kind), nil
	case kindNode == nil:
		return "", bad("kind", version[0], fmt.Sprintf("missing: a file with apiVersion needs kind: add %q", "kind: "+string(kind)))
	case version == nil:
		return "", bad("apiVersion", kindNode[0], fmt.Sprintf("missing: a file with kind needs apiVersion: add %q", "apiVersion: "+contract.CurrentAPIVersion))
	}
	known := strings.Join(contract.APIVersions(), ", ")
	if v := version[1]; v.Kind != yaml.ScalarNode || !contract.KnownAPIVersion(v.Value) {
		return "", bad("apiVersion", v, fmt.Sprintf("%s: unknown version: accepted: %s", quoted(v), known))
	}
	if k := kindNode[1]; k.Kind != yaml.ScalarNode || contract.FileKind(k.Value) != kind {
		msg := fmt.Sprintf("%s: want kind %s in a %s", quoted(k), kind, kind.FileType())
		if other := contract.FileKind(k.Value); k.Kind == yaml.ScalarNode && other.Known() {
			msg += fmt.Sprintf(" (kind %s is a %s: give it as one)", other, other.FileType())
		}
		return "", bad("kind", k, msg)
	}
	return "", nil
}

// topLevel returns the key and value nodes of key in the mapping doc; nil
// when absent.
func topLevel(doc *yaml.Node, key string) []*yaml.Node {
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			return doc.Content[i : i+2]
		}
	}
	return nil
}

// quoted is a node's value as the file wrote it: a scalar quoted, else
// its YAML kind.
func quoted(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "not a string"
}
