package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestWorkflowsCallExistingTargets checks that every 'make X' in the
// GitHub Actions workflows and local actions names a Makefile target, and
// that every local action they use exists.
func TestWorkflowsCallExistingTargets(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_.-]+):`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	files, _ := filepath.Glob("../.github/workflows/*.yaml")
	actions, _ := filepath.Glob("../.github/actions/*/action.yaml")
	files = append(files, actions...)
	files = append(files, "../action.yml") // the reusable action
	if len(files) < 4 {
		t.Fatalf("workflows and actions found: %v", files)
	}
	makeRE := regexp.MustCompile(`\bmake\s+([a-zA-Z0-9_.-]+)`)
	calls := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(doc, func(key string, v string) {
			switch key {
			case "run":
				for _, m := range makeRE.FindAllStringSubmatch(v, -1) {
					calls++
					if !targets[m[1]] {
						t.Errorf("%s runs 'make %s', which the Makefile lacks", f, m[1])
					}
				}
			case "uses":
				if strings.HasPrefix(v, "./") {
					_, errYAML := os.Stat(filepath.Join("..", v, "action.yaml"))
					_, errYML := os.Stat(filepath.Join("..", v, "action.yml"))
					if errYAML != nil && errYML != nil {
						t.Errorf("%s uses %s, which does not exist", f, v)
					}
				} else if !regexp.MustCompile(`@v\d+\.\d+\.\d+$`).MatchString(v) {
					t.Errorf("%s uses %s without a pinned version (want @vX.Y.Z)", f, v)
				}
			}
		})
	}
	if calls == 0 {
		t.Error("no workflow runs make")
	}
}

func walk(v any, f func(key, value string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok {
				f(k, s)
			}
			walk(c, f)
		}
	case []any:
		for _, c := range x {
			walk(c, f)
		}
	}
}

// stubID and stubSudo stand in for id and sudo in TestAsRootScript: id
// says STUB_UID; sudo records its arguments, refuses -n without
// STUB_SUDO_OK, and runs what it is given.
const (
	stubID   = "#!/usr/bin/env bash\necho \"${STUB_UID:-0}\"\n"
	stubSudo = `#!/usr/bin/env bash
printf '%s\n' "$*" >> "$STUB_LOG"
if [ "$1" = -n ]; then [ -n "${STUB_SUDO_OK:-}" ]; exit; fi
[ "$1" = chown ] && exit 0
shift; exec "$@"
`
)

// TestAsRootScript runs hack/as-root.sh, which the workflows and the setup
// action use for root: it runs the command directly as root, through sudo
// with the environment and PATH otherwise, says how to fix a runner
// without passwordless sudo, and gives paths root wrote back to the user.
func TestAsRootScript(t *testing.T) {
	stubs := t.TempDir()
	for name, body := range map[string]string{"id": stubID, "sudo": stubSudo} {
		if err := os.WriteFile(filepath.Join(stubs, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs("../hack/as-root.sh")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "_output"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := stubs + ":" + os.Getenv("PATH")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		out  string
		sudo []string // sudo's calls, in order
	}{
		{"root", []string{"STUB_UID=0"}, []string{"echo", "ran"}, 0, "ran", nil},
		{"user with sudo", []string{"STUB_UID=1000", "STUB_SUDO_OK=1"}, []string{"echo", "ran"}, 0, "ran",
			[]string{"-n true", "-E env PATH=" + path + " echo ran"}},
		{"user without sudo", []string{"STUB_UID=1000"}, []string{"echo", "ran"}, 2, "echo needs root: run the runner as root or give its user passwordless sudo",
			[]string{"-n true"}},
		{"give back as a user", []string{"STUB_UID=1000"}, []string{"--give-back", "_output", "missing", "."}, 0, "",
			[]string{"chown -R 1000:1000 _output ."}},
		{"give back as root", []string{"STUB_UID=0"}, []string{"--give-back", "_output"}, 0, "", nil},
		{"no command", nil, nil, 2, "usage:", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "sudo.log")
			c := exec.Command("bash", append([]string{script}, tc.args...)...)
			c.Dir = work
			c.Env = append(os.Environ(), append([]string{"PATH=" + path, "STUB_LOG=" + log}, tc.env...)...)
			out, err := c.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.out) {
				t.Errorf("exit %d, output %q; want exit %d and %q", code, out, tc.code, tc.out)
			}
			data, _ := os.ReadFile(log)
			var calls []string
			if s := strings.TrimSpace(string(data)); s != "" {
				calls = strings.Split(s, "\n")
			}
			if strings.Join(calls, "|") != strings.Join(tc.sudo, "|") {
				t.Errorf("sudo %q, want %q", calls, tc.sudo)
			}
		})
	}
}
