package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/internal/mutate"
)

// pickMutant returns the first mutant of the reconciler for which ok
// holds.
func pickMutant(t *testing.T, set *mutate.Set, what string, ok func(mutate.Mutant) bool) mutate.Mutant {
	t.Helper()
	for _, m := range set.Mutants {
		if ok(m) {
			return m
		}
	}
	t.Fatalf("no mutant of the reconciler is %s", what)
	return mutate.Mutant{}
}

// TestMutateJudgesMutants runs 'bootproof mutate' on the embedded cluster
// with four mutants of the reconciler, judged by two scenarios: one that
// never loads (killed through initial-load), one that only changes a log
// line (unobservable, not run), one in calibration-variant code no
// scenario runs (not reached; explained by the triage file given), and
// one that swaps the arguments of a symmetric comparison (it survives,
// unexplained: the run fails, exit 1).
func TestMutateJudgesMutants(t *testing.T) {
	cptest.RequireBinaries(t)
	t.Setenv("TMPDIR", t.TempDir())
	set, err := mutate.Generate("../..", mutate.DefaultPackages)
	if err != nil {
		t.Fatal(err)
	}
	neverLoads := pickMutant(t, set, "the removal of processSpec's first load", func(m mutate.Mutant) bool {
		return m.Func == "(*Reconciler).processSpec" && m.Operator == mutate.OpRemove && m.Original == "r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)"
	})
	logLine := pickMutant(t, set, "a log line removed", func(m mutate.Mutant) bool { return m.Unobservable == mutate.WhyLog })
	variantOnly := pickMutant(t, set, "in rebootedSinceSeen", func(m mutate.Mutant) bool {
		return m.Func == "(*Reconciler).rebootedSinceSeen" && m.Operator == mutate.OpNegate
	})
	symmetric := pickMutant(t, set, "sameConfig's arguments swapped", func(m mutate.Mutant) bool {
		return m.Func == "(*Reconciler).processSpec" && m.Operator == mutate.OpSwapArgs && strings.HasPrefix(m.Original, "spec.Config, status.Config")
	})
	triage := filepath.Join(t.TempDir(), "triage.yaml")
	if err := os.WriteFile(triage, []byte("apiVersion: bootproof.dev/v1alpha1\nkind: MutationTriage\nequivalent:\n"+
		"  - {file: kmm/controller/variant.go, func: (*Reconciler).rebootedSinceSeen, why: calibration-variant code}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report")
	args := []string{"mutate", "--dir", "../..", "--triage", triage, "--scenario", "fast-reboot-0.1g", "--scenario", "fast-reboot-0.5g",
		"--parallel", "4", "--report-dir", report}
	for _, m := range []mutate.Mutant{neverLoads, logLine, variantOnly, symmetric} {
		args = append(args, "--mutant", strconv.Itoa(m.ID))
	}
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, &out, &errb)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d (a survivor unexplained); stdout:\n%s\nstderr:\n%s", code, cli.ExitFailed, out.String(), errb.String())
	}
	data, err := os.ReadFile(filepath.Join(report, mutate.ReportJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep mutate.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	got := map[int]mutate.Result{}
	for _, r := range rep.Results {
		got[r.ID] = r
	}
	if r := got[neverLoads.ID]; r.Status != mutate.Killed || r.KilledBy == nil || r.KilledBy.Verdict != "fail" ||
		!strings.Contains(strings.Join(r.KilledBy.Failed, ","), "initial-load") {
		t.Errorf("mutant %d (%s): %s, killed by %+v; want killed by a fail through initial-load", neverLoads.ID, neverLoads.Change(), r.Status, r.KilledBy)
	}
	if r := got[logLine.ID]; r.Status != mutate.Unobservable || len(r.Cases) > 0 {
		t.Errorf("mutant %d (a log line): %s with %d cases; want unobservable, not run", logLine.ID, r.Status, len(r.Cases))
	}
	if r := got[variantOnly.ID]; r.Status != mutate.Equivalent || !r.Unreached || len(r.Cases) > 0 || !strings.Contains(r.Triage, triage) {
		t.Errorf("mutant %d (variant code): %s, unreached %v, %d cases, triage %q; want equivalent by the triage, not run", variantOnly.ID, r.Status, r.Unreached, len(r.Cases), r.Triage)
	}
	if r := got[symmetric.ID]; r.Status != mutate.Survived || len(r.Cases) != 2 {
		t.Errorf("mutant %d (%s): %s with %d cases; want survived, judged by both scenarios", symmetric.ID, symmetric.Change(), r.Status, len(r.Cases))
	}
	if len(rep.Baseline) != 2 || rep.Reached.Count == 0 || rep.Reached.Count >= rep.Reached.Total {
		t.Errorf("baseline %d cases, %v statements reached; want 2 cases, some but not all statements", len(rep.Baseline), rep.Reached)
	}
	if rep.Score != (mutate.Ratio{Count: 1, Total: 2}) {
		t.Errorf("score %v, want 1 of 2 (killed over killed and survived)", rep.Score)
	}
	md, err := os.ReadFile(filepath.Join(report, mutate.ReportMDFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Survivors (not explained) (1)", "Kill matrix", "Equivalent (triaged) (1)", "Unobservable by construction (1)"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("mutate.md lacks %q", w)
		}
	}
}

// TestMutateBadInput: flags refused before anything starts, naming the
// flag and what is accepted.
func TestMutateBadInput(t *testing.T) {
	noModule := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no module", []string{"mutate", "--dir", noModule}, "not a Go module's root"},
		{"sample without seed", []string{"mutate", "--dir", "../..", "--sample", "3"}, "--sample needs --seed"},
		{"zero parallel", []string{"mutate", "--dir", "../..", "--parallel", "0"}, "invalid --parallel 0: accepted: 1 or more"},
		{"score above 100", []string{"mutate", "--dir", "../..", "--min-score", "101"}, "invalid --min-score 101: accepted: 0 to 100"},
		{"unknown mutant", []string{"mutate", "--dir", "../..", "--mutant", "99999"}, `mutant "99999": no mutant has this ID`},
		{"bad triage file", []string{"mutate", "--dir", "../..", "--triage", filepath.Join(noModule, "none.yaml")}, "--triage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := cli.Run(context.Background(), tc.args, &out, &errb); code != cli.ExitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), cli.ExitUsage, tc.want)
			}
		})
	}
}

func TestMutatePasses(t *testing.T) {
	res := func(st mutate.Status) mutate.Result { return mutate.Result{Status: st} }
	for _, tc := range []struct {
		name                 string
		results              []mutate.Result
		minScore             float64
		strict, allowSurvive bool
	}{
		{"all killed", []mutate.Result{res(mutate.Killed)}, 90, true, true},
		{"a survivor", []mutate.Result{res(mutate.Killed), res(mutate.Survived)}, 0, false, true},
		{"a survivor below the score", []mutate.Result{res(mutate.Killed), res(mutate.Survived)}, 90, false, false},
		{"mislabelled", []mutate.Result{res(mutate.Killed), res(mutate.Mislabelled)}, 0, false, false},
		{"not judged", []mutate.Result{res(mutate.Killed), res(mutate.NotJudged)}, 0, false, false},
		{"triage contradicted", []mutate.Result{{Status: mutate.Killed, TriagedButKilled: true}}, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &mutate.Report{Results: tc.results}
			rep.Summarize()
			if got := cli.MutatePasses(rep, tc.minScore, false); got != tc.strict {
				t.Errorf("without --allow-survivors: %v, want %v", got, tc.strict)
			}
			if got := cli.MutatePasses(rep, tc.minScore, true); got != tc.allowSurvive {
				t.Errorf("with --allow-survivors: %v, want %v", got, tc.allowSurvive)
			}
		})
	}
}
