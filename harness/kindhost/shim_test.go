package kindhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDropCapabilities(t *testing.T) {
	drop := []string{"CAP_SYS_RESOURCE"}
	for _, tc := range []struct {
		name, in    string
		wantChanged bool
		wantSets    map[string][]string
	}{
		{"privileged", `{"user":{"uid":0},"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_CHOWN","CAP_SYS_RESOURCE"],"inheritable":["CAP_CHOWN"]},"args":["sh"]}`,
			true, map[string][]string{"bounding": {"CAP_CHOWN"}, "effective": {}, "permitted": {"CAP_CHOWN"}, "inheritable": {"CAP_CHOWN"}}},
		{"nothing to drop", `{"capabilities":{"bounding":["CAP_CHOWN"]}}`, false, map[string][]string{"bounding": {"CAP_CHOWN"}}},
		{"no capabilities", `{"args":["true"]}`, false, nil},
		{"null capabilities", `{"capabilities":null}`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := DropCapabilities(json.RawMessage(tc.in), drop)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !changed && string(out) != tc.in {
				t.Fatalf("unchanged input rewritten: %s", out)
			}
			var got struct {
				Capabilities map[string][]string `json:"capabilities"`
				Args         []string            `json:"args"`
				User         map[string]int      `json:"user"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if tc.wantSets != nil && !reflect.DeepEqual(got.Capabilities, tc.wantSets) {
				t.Fatalf("capabilities = %v, want %v", got.Capabilities, tc.wantSets)
			}
			var in map[string]json.RawMessage
			_ = json.Unmarshal([]byte(tc.in), &in)
			var outFields map[string]json.RawMessage
			_ = json.Unmarshal(out, &outFields)
			for k, v := range in {
				if k != "capabilities" && string(outFields[k]) != string(v) {
					t.Errorf("field %s changed: %s -> %s", k, v, outFields[k])
				}
			}
		})
	}
	if _, _, err := DropCapabilities(json.RawMessage(`{"capabilities":{"bounding":"CAP_CHOWN"}}`), drop); err == nil {
		t.Fatal("a set that is not a list was accepted")
	}
}

func TestParseInvocation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Invocation
	}{
		{[]string{"--root", "/run/runc", "--log", "/l.json", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, Invocation{Command: "create", Bundle: "/b"}},
		{[]string{"create", "--bundle=/b2", "id"}, Invocation{Command: "create", Bundle: "/b2"}},
		{[]string{"run", "id"}, Invocation{Command: "run", Bundle: "."}},
		{[]string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, Invocation{Command: "exec", Process: "/tmp/p.json"}},
		{[]string{"--root", "/r", "delete", "id"}, Invocation{Command: "delete"}},
		{[]string{"--version"}, Invocation{}},
	} {
		got, err := ParseInvocation(tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("%v: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
	if _, err := ParseInvocation([]string{"create", "--bundle"}); err == nil {
		t.Fatal("--bundle without a value was accepted")
	}
}

func TestPrepareRewritesBundleAndProcess(t *testing.T) {
	dir := t.TempDir()
	config := `{"ociVersion":"1.2.0","process":{"capabilities":{"bounding":["CAP_SYS_ADMIN","CAP_SYS_RESOURCE"]}},"root":{"path":"rootfs"}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(Invocation{Command: "create", Bundle: dir}, []string{"CAP_SYS_RESOURCE"}); err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OCIVersion string `json:"ociVersion"`
		Process    struct {
			Capabilities struct{ Bounding []string } `json:"capabilities"`
		} `json:"process"`
		Root struct{ Path string } `json:"root"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spec.Process.Capabilities.Bounding, []string{"CAP_SYS_ADMIN"}) || spec.OCIVersion != "1.2.0" || spec.Root.Path != "rootfs" {
		t.Fatalf("bundle config after Prepare: %s", data)
	}
	if st, _ := os.Stat(filepath.Join(dir, "config.json")); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %v", st.Mode())
	}
	proc := filepath.Join(dir, "process.json")
	if err := os.WriteFile(proc, []byte(`{"args":["sh"],"capabilities":{"effective":["CAP_SYS_RESOURCE","CAP_KILL"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(Invocation{Command: "exec", Process: proc}, []string{"CAP_SYS_RESOURCE"}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(proc)
	if string(data) != `{"args":["sh"],"capabilities":{"effective":["CAP_KILL"]}}` {
		t.Fatalf("process after Prepare: %s", data)
	}
	// Nothing to drop: nothing is touched.
	if err := Prepare(Invocation{Command: "create", Bundle: filepath.Join(dir, "missing")}, nil); err != nil {
		t.Fatalf("with nothing to drop the bundle is not read: %v", err)
	}
}

func TestMissingCapabilitiesNamesOCI(t *testing.T) {
	missing, err := MissingCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		if len(m) < 5 || m[:4] != "CAP_" {
			t.Fatalf("not an OCI capability name: %q", m)
		}
	}
	t.Logf("this host's bounding set lacks %v", missing)
}
