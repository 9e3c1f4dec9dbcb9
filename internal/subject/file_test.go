package subject

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testLookup resolves ${BOOTPROOF} and ${WORKER_IMAGE}, nothing else.
func testLookup(name string) (string, bool) {
	switch name {
	case "BOOTPROOF":
		return "/bin/sh", true
	case "WORKER_IMAGE":
		return "registry.example/worker", true
	}
	return "", false
}

// TestDecodeFileInvalid checks each invalid subject file's error against
// testdata/<name>.err (run with -update to rewrite them); the testdata
// directory's absolute path is written <testdata>.
func TestDecodeFileInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/invalid-*.yaml")
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := ReadFile(f, testLookup)
			if err == nil {
				t.Fatal("DecodeFile accepted an invalid subject file")
			}
			if _, ok := err.(*fileformat.FieldError); !ok {
				t.Errorf("error %T, want a *fileformat.FieldError naming file, line and field", err)
			}
			got := strings.ReplaceAll(err.Error(), abs, "<testdata>") + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("error:\n  got  %s  want %s", got, want)
			}
			if !strings.HasPrefix(got, f+":") {
				t.Errorf("error does not start with the file name %s: %s", f, got)
			}
		})
	}
}

func TestDecodeFileExec(t *testing.T) {
	f, err := ReadFile("testdata/valid-exec.yaml", testLookup)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("testdata")
	e := f.Exec
	if !slices.Equal(e.Command, []string{"/bin/sh", "kmm", "--detector=bootid"}) {
		t.Errorf("command %q: ${BOOTPROOF} not expanded", e.Command)
	}
	if e.Env["WORKER"] != "registry.example/worker:v1" || e.Env["OPERATOR_NAMESPACE"] != "ops" {
		t.Errorf("env %v", e.Env)
	}
	if e.Dir != abs {
		t.Errorf("dir %q, want the file's directory %q", e.Dir, abs)
	}
	if e.stopTimeout != 3*time.Second {
		t.Errorf("stop timeout %s", e.stopTimeout)
	}
	if len(f.CRDs) != 1 || f.CRDs[0] != filepath.Join(abs, "crds") {
		t.Errorf("crds %v, want them relative to the file", f.CRDs)
	}
	if le := f.LeaderElection; le == nil || le.Namespace != "ops" || le.Name != "my-operator.example.com" {
		t.Errorf("leaderElection %v, want ops/my-operator.example.com", le)
	}
	if d, ok := (&Exec{File: f}).ReloadSLO(); !ok || d != 12*time.Second {
		t.Errorf("reloadSLO %s %v, want 12s", d, ok)
	}
	tests := []struct {
		scenario, want, source string
	}{
		{"fast-reboot-0.5g", "pass", ":12"}, // an exact name beats an earlier glob
		{"fast-reboot-0.1g", "fail:reload", ":11"},
		{"network-blip-no-reboot", "fail:no-extra-work,consistency", ":13"},
		{"slow-reboot-3g", "fail", ":14"}, // the first glob that matches
		{"reboot-during-load", "fail", ":14"},
		{"module-removed-while-down", "pass", "no expect entry matches"},
	}
	for _, tc := range tests {
		got, ok := f.Expectation(&scenarios.Scenario{Name: tc.scenario})
		if !ok || got.String() != tc.want || !strings.Contains(got.Source, tc.source) {
			t.Errorf("%s: expectation %s from %q, want %s from %q", tc.scenario, got, got.Source, tc.want, tc.source)
		}
	}
}

func TestDecodeFileDeployment(t *testing.T) {
	f, err := ReadFile("testdata/valid-deployment.yaml", testLookup)
	if err != nil {
		t.Fatal(err)
	}
	if f.Exec != nil || f.Deployment.Namespace != "ops" || f.Deployment.timeout != 30*time.Second {
		t.Errorf("decoded %+v %+v", f.Exec, f.Deployment)
	}
	if got, _ := f.Expectation(&scenarios.Scenario{Name: "double-reboot"}); got.Outcome != scenarios.Pass {
		t.Errorf("no expect: %s, want pass", got)
	}
}

// The example subject files decode, and say what the README says.
func TestExampleSubjectFiles(t *testing.T) {
	lookup := func(name string) (string, bool) {
		if name == "KMM_REPO" {
			return "", false
		}
		return testLookup(name)
	}
	for _, name := range []string{"bootproof-bootid", "bootproof-legacy"} {
		f, err := ReadFile("../../examples/subjects/"+name+".yaml", lookup)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Name != name || f.Exec == nil || f.Exec.Command[1] != "kmm" {
			t.Errorf("%s: %+v", name, f)
		}
	}
	// The upstream KMM files need $KMM_REPO, and say so.
	for _, name := range []string{"kmm-upstream", "kmm-upstream-config-file"} {
		_, err := ReadFile("../../examples/subjects/"+name+".yaml", lookup)
		if err == nil || !strings.Contains(err.Error(), "${KMM_REPO} is not set") {
			t.Errorf("%s.yaml without $KMM_REPO: %v", name, err)
		}
	}
}

// The example files of bootproof's own reconciler expect of each catalog
// scenario what the scenario expects of the built-in subject with the
// same detector: the same reconciler, run out of process or as a
// Deployment, is judged alike (a scenario added to the catalog must be
// stated in both places).
func TestExampleSubjectFilesAgreeWithTheCatalog(t *testing.T) {
	catalog, err := scenarios.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for file, builtin := range map[string]string{
		"bootproof-bootid": scenarios.SubjectBootID, "bootproof-bootid-deployment": scenarios.SubjectBootID,
		"bootproof-legacy": scenarios.SubjectLegacy, "bootproof-legacy-deployment": scenarios.SubjectLegacy,
	} {
		f, err := ReadFile("../../examples/subjects/"+file+".yaml", testLookup)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, s := range catalog {
			want, ok := s.Expect[builtin]
			if !ok {
				want = scenarios.Expectation{Outcome: scenarios.Pass}
			}
			if got, _ := f.Expectation(s); got.String() != want.String() {
				t.Errorf("%s.yaml expects %s of %s, the catalog expects %s of %s", file, got, s.Name, want, builtin)
			}
		}
	}
}

// The upstream KMM files decode against a KMM checkout: one names its
// ConfigMap, the other a configuration file next to it that turns leader
// election and metrics off; both expect every scenario to pass.
func TestExampleUpstreamKMMFiles(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{"bin", "config/crd/bases"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "bin", "manager"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) (string, bool) {
		if name == "KMM_REPO" {
			return repo, true
		}
		return testLookup(name)
	}
	for name, config := range map[string]string{"kmm-upstream": "--config=kmm-operator-manager-config",
		"kmm-upstream-config-file": "--config=kmm-upstream-controller-config.yaml"} {
		f, err := ReadFile("../../examples/subjects/"+name+".yaml", lookup)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Name != name || f.Exec == nil || f.Exec.Command[0] != filepath.Join(repo, "bin", "manager") || f.Exec.Command[1] != config {
			t.Errorf("%s: command %q", name, f.Exec.Command)
		}
		for _, sc := range []string{"reboot-after-load-before-sync", "fast-reboot-0.5g", "kubelet-restart-no-reboot"} {
			if got, _ := f.Expectation(&scenarios.Scenario{Name: sc}); got.Outcome != scenarios.Pass || len(got.Assertions) != 0 {
				t.Errorf("%s expects %s of %s, want pass: what a correct operator must do", name, got, sc)
			}
		}
	}
	// The manager runs in the subject file's directory, where its
	// configuration file is.
	data, err := os.ReadFile("../../examples/subjects/kmm-upstream-controller-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		LeaderElection struct{ Enabled *bool }      `json:"leaderElection"`
		Metrics        struct{ BindAddress string } `json:"metrics"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LeaderElection.Enabled == nil || *cfg.LeaderElection.Enabled || cfg.Metrics.BindAddress != "0" {
		t.Errorf("controller config: leader election %v, metrics bind address %q; out of cluster both must be off", cfg.LeaderElection.Enabled, cfg.Metrics.BindAddress)
	}
}

// Every calibration variant has one file under examples/calibration/, and
// its expectations come from what it lists: a known-bad variant fails the
// scenarios listed through the assertion named and is expected to pass
// the others; a slow one passes everything.
func TestExampleCalibrationFiles(t *testing.T) {
	files, err := filepath.Glob("../../examples/calibration/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no calibration files: %v", err)
	}
	cat, err := scenarios.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, p := range files {
		f, err := ReadFile(p, testLookup)
		if err != nil {
			t.Fatal(err)
		}
		c := f.Calibration
		if c == nil {
			t.Fatalf("%s: no calibration section", p)
		}
		if other, dup := seen[c.Variant]; dup {
			t.Errorf("variant %s in %s and %s", c.Variant, other, p)
		}
		seen[c.Variant] = p
		if f.Name != "cal-"+c.Variant || !slices.Contains(f.Exec.Command, "--variant="+c.Variant) {
			t.Errorf("%s: name %s, command %v: want cal-%s running --variant=%s", p, f.Name, f.Exec.Command, c.Variant, c.Variant)
		}
		listed := 0
		for _, s := range cat {
			e, _ := f.Expectation(s)
			g := c.Listed(s.Name)
			switch {
			case g != nil:
				listed++
				if e.String() != g.Expect.String() {
					t.Errorf("%s: %s expected %s, listed as %s", p, s.Name, e, g.Expect)
				}
			case e.Outcome != scenarios.Pass:
				t.Errorf("%s: %s not listed but expected %s", p, s.Name, e)
			}
		}
		if (c.Kind() == "defect") != (listed > 0) {
			t.Errorf("%s: a %s variant listing %d scenarios", p, c.Kind(), listed)
		}
	}
	for _, v := range variant.All {
		if _, ok := seen[string(v.Name)]; !ok {
			t.Errorf("variant %s has no file under examples/calibration/", v.Name)
		}
	}
}

// TestSeesExclusions: a pattern with a leading ! takes scenarios out of
// its group, which then lists every other match; an exclusion that
// matches no scenario of the catalog is refused like any pattern.
func TestSeesExclusions(t *testing.T) {
	g := SeesGroup{Scenarios: []string{"*", "!nmc-deleted-*", "!fast-reboot-0.1g"}}
	for name, want := range map[string]bool{"fast-reboot-0.5g": true, "nmc-deleted-while-loading": false, "fast-reboot-0.1g": false, "reboot-storm": true} {
		if got := g.matches(name); got != want {
			t.Errorf("matches(%s) = %v, want %v", name, got, want)
		}
	}
	if (&SeesGroup{Scenarios: []string{"!fast-reboot-0.1g"}}).matches("fast-reboot-0.5g") {
		t.Errorf("a group of exclusions alone lists a scenario")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "x.yaml")
	body := "apiVersion: bootproof.dev/v1alpha1\nkind: Subject\nname: cal-two-workers\nexec: {command: [/bin/true]}\ncalibration:\n  variant: two-workers\n  sees:\n" +
		"    - scenarios: [\"*\", \"!no-such-scenario\"]\n      expect: fail:no-extra-work\n      why: w\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p, testLookup); err == nil || !strings.Contains(err.Error(), `"no-such-scenario" matches no scenario of the catalog`) {
		t.Errorf("an exclusion of no scenario: %v, want refused", err)
	}
}
