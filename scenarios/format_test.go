package scenarios

import (
	"cmp"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// A scenario without reloadBound gets the default, shown as such.
func TestReloadBoundDefault(t *testing.T) {
	s, err := Decode("d.yaml", []byte("apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\nname: d\nnodes: 1\nmodules: [{name: dummy}]\nexpect: {bootid: pass}\nactions:\n  - wait-reloaded: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.ReloadBound.FirstLoadTimes != DefaultReloadTimes || s.ReloadBound.AtLeast.Abs != DefaultReloadAtLeast {
		t.Errorf("reloadBound %+v, want the defaults", s.ReloadBound)
	}
}

func TestDecodeValid(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/valid-*.yaml")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Decode(f, data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if s.Name == "" || len(s.Actions) == 0 {
				t.Errorf("decoded %+v", s)
			}
		})
	}
}

func TestDecodeValidFull(t *testing.T) {
	data, err := os.ReadFile("testdata/valid-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode("valid-full.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Modules[0].ModuleName != "kmm_ci_a" || s.Modules[1].ModuleName != "dummy" {
		t.Errorf("module names defaulted to %q, %q", s.Modules[0].ModuleName, s.Modules[1].ModuleName)
	}
	r := s.Actions[1]
	if r.Kind != ActReboot || r.Downtime.Resolve(10*time.Second) != 5*time.Second || r.Startup.NotReadyFor.Abs != 2*time.Second ||
		r.Wait || r.Stagger.Abs != 100*time.Millisecond || !r.On.All {
		t.Errorf("reboot action = %+v", r)
	}
	if got := s.Actions[2].On.Nodes(3); len(got) != 2 || got[1] != 2 {
		t.Errorf("restart-kubelet targets %v, want [0 2]", got)
	}
	if s.Actions[3].Duration.Grace != 0.25 {
		t.Errorf("network-blip duration = %+v", s.Actions[3].Duration)
	}
	if s.Deadline.Abs != 45*time.Second || s.PodLatency.Abs != time.Second {
		t.Errorf("deadline %v podLatency %v", s.Deadline, s.PodLatency)
	}
	if b := s.ReloadBound; b.FirstLoadTimes != 4 || b.AtLeast.Grace != 0.5 || b.String() != "4 x the slowest load measured, at least 0.5g" {
		t.Errorf("reloadBound %+v (%s)", b, b)
	}
}

// TestDecodeInvalid checks each invalid file's error against
// testdata/<name>.err (run with -update to rewrite them).
func TestDecodeInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/invalid-*.yaml")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Decode(filepath.Base(f), data)
			if err == nil {
				t.Fatal("Decode accepted an invalid scenario")
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("error:\n  got  %s  want %s", got, want)
			}
			if !strings.HasPrefix(got, filepath.Base(f)+":") {
				t.Errorf("error does not start with the file name: %s", got)
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	all, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fast-reboot-0.1g", "fast-reboot-0.5g", "fast-reboot-0.8g", "slow-reboot-1.5g", "slow-reboot-3g",
		"boundary-sweep", "double-reboot", "reboot-during-load", "reboot-after-load-before-sync", "subject-down-during-reboot",
		"kubelet-notready-blip", "kubelet-restart-no-reboot", "network-blip-no-reboot", "module-removed-while-down",
		"kernel-upgrade-on-reboot", "reboot-storm", "repeated-reboots",
		"panic-reboot-0.5g", "guest-reboot-0.5g", "power-cycle-1.5g", "node-pause-no-reboot"}
	have := map[string]*Scenario{}
	for _, s := range all {
		have[s.Name] = s
	}
	for _, n := range want {
		s, ok := have[n]
		if !ok {
			t.Errorf("catalog lacks %s", n)
			continue
		}
		if s.Expect["bootid"].Outcome != Pass {
			t.Errorf("%s: the bootid subject must be expected to pass", n)
		}
		// An expected failure says through which assertion.
		for subj, e := range s.Expect {
			if e.Outcome == Fail && len(e.Assertions) == 0 {
				t.Errorf("%s: %s is expected to fail without naming the assertion (e.g. fail:reload)", n, subj)
			}
		}
		// Every fast-reboot scenario is a negative control for legacy.
		if s.Precondition == "fast" && strings.HasPrefix(n, "fast-reboot") && s.Expect["legacy"].Outcome != Fail {
			t.Errorf("%s: legacy must be expected to fail a fast reboot", n)
		}
	}
	// The VM smoke subset (.ci/run) covers a fast reset and a panic that
	// legacy must fail, a power cycle longer than the grace period and a
	// node pause without a reboot.
	smoke, err := Select(all, nil, []string{"vm-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, s := range smoke {
		for _, a := range s.Actions {
			switch {
			case a.Kind == ActReboot && s.Precondition == "fast" && s.Expect["legacy"].Outcome == Fail:
				covered["fast "+string(cmp.Or(a.Mode, nodeapi.RebootReset))] = true
			case a.Kind == ActReboot && s.Precondition == "slow":
				covered["slow "+string(cmp.Or(a.Mode, nodeapi.RebootReset))] = true
			case a.Kind == ActPauseNode:
				covered["pause"] = true
			}
		}
	}
	for _, k := range []string{"fast reset", "fast panic", "slow power-cycle", "pause"} {
		if !covered[k] {
			t.Errorf("vm-smoke lacks a %s scenario (covered: %v)", k, covered)
		}
	}
	if got, err := Select(all, []string{"fast-reboot-*"}, nil); err != nil || len(got) != 3 {
		t.Errorf("Select fast-reboot-*: %d, %v", len(got), err)
	}
	if _, err := Select(all, []string{"nope"}, nil); err == nil || !strings.Contains(err.Error(), "fast-reboot-0.1g") {
		t.Errorf("Select of an unknown name: %v", err)
	}
}

// Every catalog scenario is in the current format: none loads with a
// warning.
func TestCatalogVersioned(t *testing.T) {
	all, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if len(s.Warnings) > 0 {
			t.Error(strings.Join(s.Warnings, "; "))
		}
	}
}

// TestControlsInterleaving: a timeline controls the interleaving of the
// subject and the nodes through the actions that stop or restart the
// subject or wait for a worker pod, never through a disruption or a
// reload wait alone.
func TestControlsInterleaving(t *testing.T) {
	for _, k := range ActionKinds() {
		want := false
		switch k {
		case string(ActPauseSubject), string(ActResumeSubject), string(ActRestartSubject), string(ActWaitWorker):
			want = true
		}
		s := &Scenario{Actions: []Action{{Kind: ActWaitReloaded}, {Kind: ActReboot}, {Kind: ActionKind(k)}, {Kind: ActWaitReloaded}}}
		if got := s.ControlsInterleaving(); got != want {
			t.Errorf("a timeline with %s: ControlsInterleaving = %v, want %v", k, got, want)
		}
	}
	if (&Scenario{}).ControlsInterleaving() {
		t.Error("an empty timeline controls nothing")
	}
}
