package version

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// TestFromBuildInfo: the module version and the VCS stamps Go records
// become the version, commit (with -dirty for a modified tree) and date.
func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
	}{
		{"go install module@version", debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}},
			Info{Version: "v0.4.0", Commit: Unknown, Date: Unknown}},
		{"a clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-12-05T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			Info{Version: "(devel)", Commit: "0123456789abcdef", Date: "2026-12-05T10:00:00Z"}},
		{"a modified checkout", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: "(devel)", Commit: "abc-dirty", Date: Unknown}},
		{"no VCS stamp, modified means nothing", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}},
			Info{Version: "(devel)", Commit: Unknown, Date: Unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Info{Version: "(devel)", Commit: Unknown, Date: Unknown}
			fromBuildInfo(&got, &tc.bi)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGet: what the binary targets comes from the pins inside it, and a
// release build's stamps win over Go's build information.
func TestGet(t *testing.T) {
	in := Get()
	if in.Kubernetes != cpbuild.KubernetesVersion() || in.Etcd != cpbuild.EtcdVersion() || in.KindNodeImage != "bootproof/kind-node:"+in.Kubernetes+"-*" ||
		!strings.Contains(in.Platform, "/") || !strings.HasPrefix(in.GoVersion, "go") {
		t.Errorf("Get = %+v", in)
	}
	releaseVersion, releaseCommit, releaseDate = "v9.8.7", "fedcba", "2027-01-02T03:04:05Z"
	t.Cleanup(func() { releaseVersion, releaseCommit, releaseDate = "", "", "" })
	in = Get()
	if in.Version != "v9.8.7" || in.Commit != "fedcba" || in.Date != "2027-01-02T03:04:05Z" {
		t.Errorf("a release's Get = %+v", in)
	}
	var text bytes.Buffer
	if err := in.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"bootproof:       v9.8.7\n", "commit:          fedcba\n", "kubernetes:      " + in.Kubernetes + " (embedded control plane", "kind node image: bootproof/kind-node:"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var back Info
	if err := json.Unmarshal(data, &back); err != nil || back != in {
		t.Errorf("JSON round trip: %s -> %+v (%v)", data, back, err)
	}
	for _, key := range []string{`"version"`, `"commit"`, `"date"`, `"goVersion"`, `"platform"`, `"kubernetes"`, `"etcd"`, `"kindNodeImage"`} {
		if !bytes.Contains(data, []byte(key)) {
			t.Errorf("JSON lacks %s: %s", key, data)
		}
	}
}
