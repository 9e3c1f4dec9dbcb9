package contract

import "slices"

// The versions and kinds of bootproof's own file formats: a scenario file
// (package scenarios decodes it) and a subject file (package
// internal/subject decodes it) open with
//
//	apiVersion: bootproof.dev/v1alpha1
//	kind: Scenario
//
// (or kind: Subject), so that the day a format changes a file says which
// version it was written for.

// FormatGroup is the group of every apiVersion of bootproof's files.
const FormatGroup = "bootproof.dev"

// APIVersionV1Alpha1 is the first version of the scenario and subject
// file formats.
const APIVersionV1Alpha1 = FormatGroup + "/v1alpha1"

// CurrentAPIVersion is the version new files are written in, and the one
// a deprecation warning asks to add.
const CurrentAPIVersion = APIVersionV1Alpha1

// APIVersions returns the versions the decoders read, oldest first.
func APIVersions() []string { return []string{APIVersionV1Alpha1} }

// KnownAPIVersion reports whether the decoders read version v.
func KnownAPIVersion(v string) bool { return slices.Contains(APIVersions(), v) }

// FileKind is the kind of a bootproof file, the value of its kind field.
type FileKind string

// The kinds of bootproof's files.
const (
	// KindScenario is a scenario file (run --scenario-file, the catalog).
	KindScenario FileKind = "Scenario"
	// KindSubject is a subject file (run --subject-file, calibration
	// variants).
	KindSubject FileKind = "Subject"
	// KindMutationTriage is the mutation run's triage file: the
	// reconciler's equivalent mutants, each with why (bootproof mutate
	// --triage).
	KindMutationTriage FileKind = "MutationTriage"
)

// FileKinds returns every kind of bootproof file.
func FileKinds() []FileKind { return []FileKind{KindScenario, KindSubject, KindMutationTriage} }

// Known reports whether k is one of FileKinds.
func (k FileKind) Known() bool { return slices.Contains(FileKinds(), k) }

// FileType names the file a kind is: "scenario file", "subject file"; ""
// for an unknown kind.
func (k FileKind) FileType() string {
	switch k {
	case KindScenario:
		return "scenario file"
	case KindSubject:
		return "subject file"
	case KindMutationTriage:
		return "mutation triage file"
	}
	return ""
}
