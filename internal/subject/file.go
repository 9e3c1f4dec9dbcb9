package subject

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// File is a subject described in YAML (bootproof run --subject-file): an
// operator the harness starts as a process (exec) or finds deployed in
// the cluster (deployment), what to apply before it starts, and the
// verdict expected of it per scenario. Every relative path in the file is
// relative to the file's directory.
type File struct {
	// Name is the subject's name in every report.
	Name string `yaml:"name"`
	// Description is shown by nothing yet but kept for the reader.
	Description string `yaml:"description"`
	// Exec: the harness owns the operator's process.
	Exec *ExecSpec `yaml:"exec"`
	// Deployment: the operator is already deployed in the cluster.
	Deployment *DeploymentSpec `yaml:"deployment"`
	// CRDs are files or directories of CustomResourceDefinitions applied
	// (server-side) before the first case, and waited for. ${NAME}
	// expands, as in ExecSpec.Command.
	CRDs []string `yaml:"crds"`
	// CRDOptionalFields are fields of the CRDs' schemas the operator can
	// do without ("status.modules[].lastTransitionTime"). A CRD of crds
	// that exists and that bootproof did not create is used as it is
	// (never changed, adopt or not) when it serves every version, the
	// status subresource and every field of the file's CRD but these; one
	// that lacks more is an error naming what it lacks (adopt: true
	// applies the file's CRD over it instead).
	CRDOptionalFields []string `yaml:"crdOptionalFields"`
	// Manifests are files or directories of objects (namespaces,
	// ConfigMaps, RBAC, ...) applied before the operator starts.
	Manifests []string `yaml:"manifests"`
	// Adopt lets the harness apply CRDs and manifests over objects that
	// exist and that bootproof did not create (forcing its ownership of
	// their fields; they stay changed after the run). Without it such an
	// object is an error naming it: on a shared cluster bootproof changes
	// nothing it did not create.
	Adopt bool `yaml:"adopt"`
	// Expect maps scenario names or globs to pass, fail or
	// fail:<assertion>,...; a scenario no entry matches is expected to
	// pass. An exact name beats a glob; among globs the first wins.
	Expect yaml.Node `yaml:"expect"`
	// Calibration, when set, makes the file one of bootproof's
	// calibration variants ('bootproof calibrate').
	Calibration *Calibration `yaml:"calibration"`
	// LeaderElection names the Lease the operator elects its leader
	// with, if it does (${NAME} expands). After the harness stops and
	// starts the operator, a reload window opens only once an instance
	// holds it again (scenarios.LeaderLeaser): an operator that keeps
	// its Lease on exit waits for it to expire first. Without it, an
	// exec subject's Lease is found (the first Lease outside
	// kube-node-lease that takes a new holder after the process
	// started); a deployment's is not, and its window opens when it is
	// available again.
	LeaderElection *scenarios.LeaseRef `yaml:"leaderElection"`
	// ReloadSLO is the operator's reload service level ("10s"): a reload
	// that comes later than this after its window opened fails
	// reload-slo (late); one that never comes by the scenario's deadline
	// fails reload (missed). It replaces --reload-slo for this subject;
	// without either, each scenario's measured rule applies
	// (scenarios.ReloadBound).
	ReloadSLO string `yaml:"reloadSLO"`

	// Path is the file the subject came from.
	Path string `yaml:"-"`
	// Warnings are what DecodeFile found deprecated in the file (no
	// apiVersion and kind): each names the file and says what to change.
	// A command prints them on stderr.
	Warnings  []string      `yaml:"-"`
	expect    []expectEntry `yaml:"-"`
	reloadSLO time.Duration
}

// MaxReloadSLO is the longest reload service level a subject file or
// --reload-slo may set.
const MaxReloadSLO = 10 * time.Minute

// ParseReloadSLO reads a reload service level: a duration from 1ms to
// MaxReloadSLO.
func ParseReloadSLO(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > MaxReloadSLO {
		return 0, fmt.Errorf("%q: accepted: a duration over 0 and at most %s, e.g. 10s", s, MaxReloadSLO)
	}
	return d, nil
}

// SLO is the file's reload service level (ok false: none set).
func (f *File) SLO() (time.Duration, bool) { return f.reloadSLO, f.reloadSLO > 0 }

// ExecSpec is an operator process the harness starts once per run, with
// KUBECONFIG pointing at a kubeconfig for the cluster under test, stops
// and starts again for pause-subject, resume-subject and restart-subject,
// and stops at the end (SIGTERM, then SIGKILL after StopTimeout).
type ExecSpec struct {
	// Command is the program and its arguments. ${NAME} is replaced by
	// the environment variable NAME; ${BOOTPROOF} is this bootproof
	// executable. A relative program path containing a slash is relative
	// to the file's directory; a bare name is looked up in $PATH.
	Command []string `yaml:"command"`
	// Env is added to the harness's environment (${NAME} expands).
	Env map[string]string `yaml:"env"`
	// Dir is the working directory; default the file's directory.
	Dir string `yaml:"dir"`
	// StopTimeout is how long a stop waits after SIGTERM before SIGKILL;
	// default 10s.
	StopTimeout string `yaml:"stopTimeout"`

	stopTimeout time.Duration
	// written is Command as the file wrote it, ${NAME} not expanded: what
	// the subject's log records, so that no variable's value (a token)
	// lands in a report.
	written []string
}

// logged is the command as the subject's log shows it: as written.
func (e *ExecSpec) logged() string {
	if e.written != nil {
		return strings.Join(e.written, " ")
	}
	return strings.Join(e.Command, " ")
}

// DeploymentSpec is an operator deployed in the cluster: pause-subject
// scales it to 0 and waits until its pods are gone; resume-subject scales
// it back and waits until it is available.
type DeploymentSpec struct {
	Namespace string `yaml:"namespace"`
	Name      string `yaml:"name"`
	// Timeout bounds each scale-down and scale-up; default 2m.
	Timeout string `yaml:"timeout"`

	timeout time.Duration
}

type expectEntry struct {
	pattern string
	exp     scenarios.Expectation
}

// Defaults of a subject file.
const (
	DefaultStopTimeout       = 10 * time.Second
	DefaultDeploymentTimeout = 2 * time.Minute
)

// Lookup resolves ${NAME} in a subject file; ok is false when NAME is not
// set.
type Lookup func(name string) (value string, ok bool)

// EnvLookup resolves ${NAME} from the environment, and ${BOOTPROOF} (when
// not set there) as this executable.
func EnvLookup(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	if name == "BOOTPROOF" {
		if exe, err := os.Executable(); err == nil {
			return exe, true
		}
	}
	return "", false
}

var (
	subjectNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	varRE         = regexp.MustCompile(`\$\{([^}]*)\}`)
)

// ReadFile reads and decodes a subject file (at most
// fileformat.MaxInputFileSize bytes); see DecodeFile.
func ReadFile(p string, lookup Lookup) (*File, error) {
	data, err := fileformat.ReadInputFile(p, fileformat.MaxInputFileSize)
	if err != nil {
		return nil, err
	}
	return DecodeFile(p, data, lookup)
}

// DecodeFile decodes a subject file strictly: unknown fields, wrong types
// and impossible values are *fileformat.FieldError naming the file, line
// and field. The file opens with apiVersion (contract.APIVersions) and
// kind Subject; one without both is read with a deprecation warning in
// File.Warnings (see fileformat.DecodeVersioned). ${NAME} references are
// resolved with lookup, and every path is checked to exist.
func DecodeFile(p string, data []byte, lookup Lookup) (*File, error) {
	var raw struct {
		fileformat.Header `yaml:",inline"`
		File              `yaml:",inline"`
	}
	doc, warnings, err := fileformat.DecodeVersioned(p, data, contract.KindSubject, &raw)
	if err != nil {
		return nil, err
	}
	f := &raw.File
	f.Path = p
	f.Warnings = warnings
	if err := f.validate(doc, lookup); err != nil {
		err.File = p
		return nil, err
	}
	return f, nil
}

// validate checks f and resolves its variables, paths and expectations.
func (f *File) validate(doc *yaml.Node, lookup Lookup) *fileformat.FieldError {
	bad := func(msg string, path ...string) *fileformat.FieldError {
		return &fileformat.FieldError{Line: fileformat.FieldLine(doc, path...), Field: strings.Join(path, "."), Msg: msg}
	}
	if !subjectNameRE.MatchString(f.Name) {
		return bad(fmt.Sprintf("%q: accepted: lower-case letters, digits, '-' and '.', e.g. my-operator", f.Name), "name")
	}
	if slices.Contains(Names, f.Name) {
		return bad(fmt.Sprintf("%q is a built-in subject: choose another name", f.Name), "name")
	}
	switch {
	case f.Exec == nil && f.Deployment == nil:
		return &fileformat.FieldError{Line: 1, Msg: "say how the operator runs: exec (the harness starts its process) or deployment (already deployed in the cluster)"}
	case f.Exec != nil && f.Deployment != nil:
		return bad("exec and deployment exclude each other: give one", "deployment")
	case f.Exec != nil:
		if err := f.Exec.validate(doc, f.dir(), lookup); err != nil {
			return err
		}
	default:
		if err := f.Deployment.validate(doc); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		field string
		paths []string
	}{{"crds", f.CRDs}, {"manifests", f.Manifests}} {
		for i, q := range list.paths {
			x, err := expand(q, lookup)
			if err != nil {
				return bad(fmt.Sprintf("%s[%d] %q: %v", list.field, i, q, err), list.field)
			}
			abs := f.resolve(x)
			if _, err := os.Stat(abs); err != nil {
				return bad(fmt.Sprintf("%s[%d] %q: %v (relative paths are relative to the subject file)", list.field, i, q, err), list.field)
			}
			list.paths[i] = abs
		}
	}
	if le := f.LeaderElection; le != nil {
		for _, v := range []struct {
			field string
			value *string
			check func(string) []string
			what  string
		}{{"namespace", &le.Namespace, validation.IsDNS1123Label, "a namespace name (a DNS-1123 label), e.g. kmm-operator-system"},
			{"name", &le.Name, validation.IsDNS1123Subdomain, "a Lease name (a DNS-1123 subdomain), e.g. kmm.sigs.x-k8s.io"}} {
			x, err := expand(*v.value, lookup)
			if err != nil {
				return bad(fmt.Sprintf("%q: %v", *v.value, err), "leaderElection", v.field)
			}
			if errs := v.check(x); len(errs) > 0 {
				return bad(fmt.Sprintf("%q: accepted: %s", *v.value, v.what), "leaderElection", v.field)
			}
			*v.value = x
		}
	}
	if f.ReloadSLO != "" {
		d, err := ParseReloadSLO(f.ReloadSLO)
		if err != nil {
			return bad(err.Error(), "reloadSLO")
		}
		f.reloadSLO = d
	}
	if err := f.decodeExpect(); err != nil {
		return err
	}
	return f.validateCalibration(bad)
}

// dir is the file's directory, absolute.
func (f *File) dir() string {
	d, err := filepath.Abs(filepath.Dir(f.Path))
	if err != nil {
		return filepath.Dir(f.Path)
	}
	return d
}

// resolve makes a path relative to the file's directory absolute.
func (f *File) resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.dir(), p)
}

func (e *ExecSpec) validate(doc *yaml.Node, dir string, lookup Lookup) *fileformat.FieldError {
	bad := func(msg string, path ...string) *fileformat.FieldError {
		return &fileformat.FieldError{Line: fileformat.FieldLine(doc, path...), Field: strings.Join(path, "."), Msg: msg}
	}
	if len(e.Command) == 0 || e.Command[0] == "" {
		return bad("the program to run is required, e.g. [path/to/manager, --some-flag]", "exec", "command")
	}
	e.written = slices.Clone(e.Command)
	for i, a := range e.Command {
		v, err := expand(a, lookup)
		if err != nil {
			return bad(fmt.Sprintf("[%d] %q: %v", i, a, err), "exec", "command")
		}
		e.Command[i] = v
	}
	if prog := e.Command[0]; strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		e.Command[0] = filepath.Join(dir, prog)
	}
	if strings.Contains(e.Command[0], "/") {
		if st, err := os.Stat(e.Command[0]); err != nil || st.IsDir() {
			return bad(fmt.Sprintf("program %s: not a file (relative paths are relative to the subject file)", e.Command[0]), "exec", "command")
		}
	} else if _, err := exec.LookPath(e.Command[0]); err != nil {
		return bad(fmt.Sprintf("program %q is not in $PATH: give its path", e.Command[0]), "exec", "command")
	}
	for k, v := range e.Env {
		if !envNameRE.MatchString(k) {
			return bad(fmt.Sprintf("%q is not an environment variable name", k), "exec", "env")
		}
		if k == "KUBECONFIG" {
			return bad("KUBECONFIG is set by bootproof to a kubeconfig for the cluster under test: remove it", "exec", "env")
		}
		x, err := expand(v, lookup)
		if err != nil {
			return bad(fmt.Sprintf("%s: %v", k, err), "exec", "env")
		}
		e.Env[k] = x
	}
	d, err := expand(e.Dir, lookup)
	if err != nil {
		return bad(err.Error(), "exec", "dir")
	}
	switch {
	case d == "":
		d = dir
	case !filepath.IsAbs(d):
		d = filepath.Join(dir, d)
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return bad(fmt.Sprintf("%s: not a directory", d), "exec", "dir")
	}
	e.Dir = d
	e.stopTimeout = DefaultStopTimeout
	if e.StopTimeout != "" {
		t, err := time.ParseDuration(e.StopTimeout)
		if err != nil || t <= 0 || t > 10*time.Minute {
			return bad(fmt.Sprintf("%q: accepted: a duration from 1s to 10m, e.g. 10s", e.StopTimeout), "exec", "stopTimeout")
		}
		e.stopTimeout = t
	}
	return nil
}

func (d *DeploymentSpec) validate(doc *yaml.Node) *fileformat.FieldError {
	bad := func(msg string, path ...string) *fileformat.FieldError {
		return &fileformat.FieldError{Line: fileformat.FieldLine(doc, path...), Field: strings.Join(path, "."), Msg: msg}
	}
	if errs := validation.IsDNS1123Label(d.Namespace); len(errs) > 0 {
		return bad(fmt.Sprintf("%q: the Deployment's namespace is required (a DNS-1123 label: lower-case letters, digits and '-')", d.Namespace), "deployment", "namespace")
	}
	if errs := validation.IsDNS1123Subdomain(d.Name); len(errs) > 0 {
		return bad(fmt.Sprintf("%q: the Deployment's name is required (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.')", d.Name), "deployment", "name")
	}
	d.timeout = DefaultDeploymentTimeout
	if d.Timeout != "" {
		t, err := time.ParseDuration(d.Timeout)
		if err != nil || t < time.Second || t > time.Hour {
			return bad(fmt.Sprintf("%q: accepted: a duration from 1s to 1h, e.g. 2m", d.Timeout), "deployment", "timeout")
		}
		d.timeout = t
	}
	return nil
}

// expand replaces ${NAME} with lookup(NAME); an unset name is an error.
func expand(s string, lookup Lookup) (string, error) {
	var err error
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		if !envNameRE.MatchString(name) {
			err = fmt.Errorf("${%s} is not a variable reference: use ${NAME}", name)
			return m
		}
		v, ok := lookup(name)
		if !ok && err == nil {
			err = fmt.Errorf("${%s} is not set in the environment", name)
		}
		return v
	})
	return out, err
}

// decodeExpect reads the expect mapping in file order.
func (f *File) decodeExpect() *fileformat.FieldError {
	n := &f.Expect
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &fileformat.FieldError{Line: n.Line, Field: "expect", Msg: `want a mapping of scenario names or globs to pass, fail or fail:<assertion>, e.g. {"fast-reboot-*": pass}`}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := "expect." + k.Value
		if _, err := path.Match(k.Value, ""); err != nil || k.Value == "" {
			return &fileformat.FieldError{Line: k.Line, Field: field, Msg: fmt.Sprintf("%q: not a scenario name or glob (e.g. fast-reboot-*)", k.Value)}
		}
		if slices.ContainsFunc(f.expect, func(e expectEntry) bool { return e.pattern == k.Value }) {
			return &fileformat.FieldError{Line: k.Line, Field: field, Msg: "listed twice"}
		}
		var e scenarios.Expectation
		if err := v.Decode(&e); err != nil {
			if fe, ok := err.(*fileformat.FieldError); ok {
				fe.Field = field
				return fe
			}
			return &fileformat.FieldError{Line: v.Line, Field: field, Msg: err.Error()}
		}
		e.Source = fmt.Sprintf("%s:%d", f.Path, v.Line)
		f.expect = append(f.expect, expectEntry{pattern: k.Value, exp: e})
	}
	return nil
}

// Expectation implements scenarios.Expecter: the exact entry for s, else
// the first glob that matches, else pass.
func (f *File) Expectation(s *scenarios.Scenario) (scenarios.Expectation, bool) {
	if c := f.Calibration; c != nil {
		// Each listed scenario fails through its group's assertion, every
		// other one passes.
		if g := c.Listed(s.Name); g != nil {
			e := g.Expect
			e.Source = fmt.Sprintf("%s: calibration.sees (%s)", f.Path, g.Why)
			return e, true
		}
		return scenarios.Expectation{Outcome: scenarios.Pass, Source: f.Path + ": not listed in calibration.sees, so pass"}, true
	}
	for _, e := range f.expect {
		if e.pattern == s.Name {
			return e.exp, true
		}
	}
	for _, e := range f.expect {
		if ok, _ := path.Match(e.pattern, s.Name); ok {
			return e.exp, true
		}
	}
	return scenarios.Expectation{Outcome: scenarios.Pass, Source: f.Path + ": no expect entry matches, so pass"}, true
}
