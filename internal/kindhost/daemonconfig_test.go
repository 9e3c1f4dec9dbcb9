package kindhost

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const testShim = "/usr/local/libexec/bootproof/runc-shim"

func decodeObject(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, data)
	}
	return v
}

func TestMergeDaemonConfig(t *testing.T) {
	shimEntry := map[string]any{"path": testShim}
	for _, tc := range []struct {
		name, in string
		want     map[string]any // nil: the input, byte for byte
		wantErr  string         // a refusal, naming what
	}{
		{name: "none", in: "", want: map[string]any{
			"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName}},
		{name: "blank", in: " \n\t", want: map[string]any{
			"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName}},
		{name: "empty object", in: "{}\n", want: map[string]any{
			"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName}},
		{name: "settings of its own kept", in: `{"log-level": "warn", "registry-mirrors": ["https://mirror.example/<a>&"], "features": {"buildkit": true}}`,
			want: map[string]any{"log-level": "warn", "registry-mirrors": []any{"https://mirror.example/<a>&"}, "features": map[string]any{"buildkit": true},
				"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName}},
		{name: "other runtimes kept", in: `{"runtimes": {"crun": {"path": "/usr/bin/crun", "runtimeArgs": ["--debug"]}}}`,
			want: map[string]any{"runtimes": map[string]any{"crun": map[string]any{"path": "/usr/bin/crun", "runtimeArgs": []any{"--debug"}}, RuntimeName: shimEntry},
				"default-runtime": RuntimeName}},
		{name: "null runtimes", in: `{"runtimes": null}`, want: map[string]any{
			"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName}},
		{name: "default set, runtime missing", in: `{"default-runtime": "bootproof-runc"}`, want: map[string]any{
			"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName}},
		{name: "runtime set, default missing", in: `{"runtimes": {"bootproof-runc": {"path": "` + testShim + `"}}, "debug": true}`, want: map[string]any{
			"runtimes": map[string]any{RuntimeName: shimEntry}, "default-runtime": RuntimeName, "debug": true}},
		{name: "already merged (the old script's text)", in: "{\n  \"runtimes\": {\"bootproof-runc\": {\"path\": \"" + testShim + "\"}},\n  \"default-runtime\": \"bootproof-runc\"\n}\n"},
		{name: "already merged by hand", in: `{"default-runtime":"bootproof-runc","log-level":"debug","runtimes":{"bootproof-runc":{"path":"` + testShim + `"}}}`},
		{name: "another default runtime", in: `{"default-runtime": "nvidia"}`, wantErr: `"default-runtime" is "nvidia"`},
		{name: "runc named as the default", in: `{"default-runtime": "runc"}`, wantErr: `"default-runtime" is "runc"`},
		{name: "default runtime not a string", in: `{"default-runtime": 3}`, wantErr: `"default-runtime" is 3`},
		{name: "the name taken by another path", in: `{"runtimes": {"bootproof-runc": {"path": "/opt/other"}}}`, wantErr: `runtime "bootproof-runc", {"path":"/opt/other"}`},
		{name: "the name with arguments", in: `{"runtimes": {"bootproof-runc": {"path": "` + testShim + `", "runtimeArgs": ["-x"]}}}`, wantErr: `runtime "bootproof-runc"`},
		{name: "runtimes not an object", in: `{"runtimes": ["runc"]}`, wantErr: `"runtimes" is not an object`},
		{name: "an array", in: `[]`, wantErr: "not a JSON object"},
		{name: "null", in: `null`, wantErr: "not a JSON object"},
		{name: "not JSON", in: `log-level: warn`, wantErr: "not a JSON object"},
		{name: "trailing garbage", in: `{} {}`, wantErr: "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := MergeDaemonConfig([]byte(tc.in), testShim)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrDaemonConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrDaemonConfig naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if string(out) != tc.in {
					t.Fatalf("a file that registers the shim already was rewritten:\n%s", out)
				}
				return
			}
			if got := decodeObject(t, out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("merged = %v, want %v", got, tc.want)
			}
			if !strings.HasSuffix(string(out), "}\n") || strings.Contains(string(out), `\u003c`) {
				t.Fatalf("merged file not written plainly (final newline, no HTML escapes):\n%s", out)
			}
			// Merging is idempotent, byte for byte, and Unmerge gives back
			// the same settings.
			again, err := MergeDaemonConfig(out, testShim)
			if err != nil || string(again) != string(out) {
				t.Fatalf("merging the merged file: %v\n%s\nwant\n%s", err, again, out)
			}
			back, err := UnmergeDaemonConfig(out, testShim)
			if err != nil {
				t.Fatal(err)
			}
			wantBack := map[string]any{}
			if strings.TrimSpace(tc.in) != "" {
				wantBack = decodeObject(t, []byte(tc.in))
			}
			if r, ok := wantBack["runtimes"].(map[string]any); ok {
				delete(r, RuntimeName)
				if len(r) == 0 {
					delete(wantBack, "runtimes")
				}
			} else {
				delete(wantBack, "runtimes") // null or absent
			}
			delete(wantBack, "default-runtime")
			if got := decodeObject(t, back); !reflect.DeepEqual(got, wantBack) {
				t.Fatalf("unmerged = %v, want %v", got, wantBack)
			}
		})
	}
}

func TestUnmergeDaemonConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]any // nil: the input, byte for byte
		wantErr  string
	}{
		{name: "none", in: ""},
		{name: "nothing of the shim's", in: `{"log-level": "warn", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}`},
		{name: "another path under the name is not removed", in: `{"runtimes": {"bootproof-runc": {"path": "/opt/other"}}}`},
		{name: "the old script's file", in: "{\n  \"runtimes\": {\"bootproof-runc\": {\"path\": \"" + testShim + "\"}},\n  \"default-runtime\": \"bootproof-runc\"\n}\n",
			want: map[string]any{}},
		{name: "other keys kept", in: `{"default-runtime":"bootproof-runc","log-level":"debug","runtimes":{"crun":{"path":"/usr/bin/crun"},"bootproof-runc":{"path":"` + testShim + `"}}}`,
			want: map[string]any{"log-level": "debug", "runtimes": map[string]any{"crun": map[string]any{"path": "/usr/bin/crun"}}}},
		{name: "the default alone", in: `{"default-runtime":"bootproof-runc","debug":true}`, want: map[string]any{"debug": true}},
		{name: "not an object", in: `"x"`, wantErr: "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := UnmergeDaemonConfig([]byte(tc.in), testShim)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrDaemonConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrDaemonConfig naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if string(out) != tc.in {
					t.Fatalf("a file without the shim was rewritten:\n%s", out)
				}
				return
			}
			if got := decodeObject(t, out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("unmerged = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestShimDaemonConfigFlags runs the shim's --daemon-config-merge and
// --daemon-config-unmerge (this test binary as the shim): the merged file on
// stdout, a missing file as none, and a refusal as exit 2 naming the file,
// what it holds and what to do.
func TestShimDaemonConfigFlags(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(testBinary(t), args...)
		cmd.Env = append(os.Environ(), fakeEnv+"=shim")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	missing := filepath.Join(dir, "missing.json")
	out, stderr, code := run("--daemon-config-merge", missing, testShim)
	if code != 0 || decodeObject(t, []byte(out))["default-runtime"] != RuntimeName {
		t.Fatalf("merge of a missing file: exit %d, %q, %s", code, out, stderr)
	}
	bad := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(bad, []byte(`{"default-runtime": "crun"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run("--daemon-config-merge", bad, testShim)
	for _, want := range []string{bad, `"default-runtime" is "crun"`, `remove "default-runtime"`, "'make deps-kind' again"} {
		if code != 2 || out != "" || !strings.Contains(stderr, want) {
			t.Fatalf("merge of a file with another default runtime: exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, stderr, want)
		}
	}
	if _, stderr, code = run("--daemon-config-merge", bad); code != 2 || !strings.Contains(stderr, "usage: --daemon-config-merge DAEMON_JSON SHIM_PATH") {
		t.Fatalf("merge without the shim's path: exit %d, %s", code, stderr)
	}
	if err := os.WriteFile(bad, []byte(`{"runtimes":{"bootproof-runc":{"path":"`+testShim+`"}},"default-runtime":"bootproof-runc","debug":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run("--daemon-config-unmerge", bad, testShim)
	if code != 0 || out != "{\n  \"debug\": true\n}\n" {
		t.Fatalf("unmerge: exit %d, %q, %s", code, out, stderr)
	}
}
