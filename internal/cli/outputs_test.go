package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// exitCode is the code Run would exit with for err.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exitError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v carries no exit code", err)
	}
	return ee.code
}

// TestReportDirExclusive: a new or empty --report-dir is claimed; one that
// holds files, or that another run claimed, is refused naming the flag
// (exit 2); default directories are unique even within one second.
func TestReportDirExclusive(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b")
	got, err := reportDir(fresh)
	if err != nil || got != fresh {
		t.Fatalf("new directory: %q, %v", got, err)
	}
	if _, err := reportDir(fresh); err == nil || exitCode(t, err) != ExitUsage || !strings.Contains(err.Error(), "--report-dir "+fresh) {
		t.Errorf("second claim of one directory: %v", err)
	}
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := reportDir(empty); err != nil {
		t.Errorf("existing empty directory refused: %v", err)
	}
	full := filepath.Join(base, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, reports.JUnitFile), []byte("<old/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, check := range []func(string) error{checkReportDir, func(d string) error { _, err := reportDir(d); return err }} {
		err := check(full)
		if err == nil || exitCode(t, err) != ExitUsage || !strings.Contains(err.Error(), "--report-dir "+full+" exists and is not empty") {
			t.Errorf("non-empty directory: %v", err)
		}
	}

	t.Chdir(t.TempDir())
	seen := map[string]bool{}
	for range 5 {
		d, err := reportDir("")
		if err != nil {
			t.Fatal(err)
		}
		if seen[d] || !strings.Contains(filepath.Base(d), time.Now().Format("20060102")) {
			t.Errorf("default directory %s: repeated or not timestamped", d)
		}
		seen[d] = true
	}
}

// TestRunRefusesFullReportDir: 'bootproof run' refuses a non-empty
// --report-dir before it starts anything.
func TestRunRefusesFullReportDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"run", "--bin-dir", filepath.Join(dir, "nope"), "--report-dir", dir}, &out, &errb)
	msg := strings.TrimSpace(errb.String())
	if code != ExitUsage || !strings.Contains(msg, "--report-dir "+dir+" exists and is not empty") || strings.Contains(msg, "\n") {
		t.Errorf("exit %d, stderr %q", code, msg)
	}
}

// TestReportWriteFailure: a run whose reports cannot be written exits 3
// and names the path that failed; no junit.xml is published.
func TestReportWriteFailure(t *testing.T) {
	dir := t.TempDir()
	// index.html is a directory with a file in it: the rename fails, even
	// for root (for whom a read-only directory is writable).
	blocked := filepath.Join(dir, reports.HTMLFile)
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	rc := &runContext{s: Streams{Out: &out, Err: &errb}, o: runOptions{reportDir: dir}}
	err := rc.report(context.Background(), dir, scenarios.Results{}, time.Now())
	if err == nil || exitCode(t, err) != ExitInfra || !strings.Contains(err.Error(), blocked) {
		t.Errorf("report into a blocked directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.JUnitFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("junit.xml written although the reports failed (stat %v)", err)
	}
}

// TestKubeconfigOut: an existing file is refused unless --force (and then
// kept at exit); a file this run created is removed at exit, unless
// something else has replaced it meanwhile.
func TestKubeconfigOut(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(src, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{checkKubeconfigOut(existing, false), func() error { _, err := writeKubeconfigOut(src, existing, false); return err }()} {
		if err == nil || exitCode(t, err) != ExitUsage || !strings.Contains(err.Error(), "--kubeconfig-out "+existing+" exists") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("existing file: %v", err)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "mine" {
		t.Errorf("refused file changed: %q", b)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"controlplane", "up", "--kubeconfig-out", existing}, &out, &errb); code != ExitUsage ||
		!strings.Contains(errb.String(), "--kubeconfig-out "+existing+" exists") {
		t.Errorf("controlplane up with an existing --kubeconfig-out: exit %d, %q", code, errb.String())
	}

	// --force replaces it; at exit it stays (this run did not create it).
	if err := checkKubeconfigOut(existing, true); err != nil {
		t.Fatal(err)
	}
	remove, err := writeKubeconfigOut(src, existing, true)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(existing); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("forced file: %v, %v; want mode 0600", st, err)
	}
	remove()
	if b, err := os.ReadFile(existing); err != nil || string(b) != "apiVersion: v1\n" {
		t.Errorf("forced file after exit: %q, %v", b, err)
	}

	// A new file: 0600, removed at exit.
	fresh := filepath.Join(dir, "fresh")
	remove, err = writeKubeconfigOut(src, fresh, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v, %v; want mode 0600", st, err)
	}
	remove()
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("created file left at exit (stat %v)", err)
	}

	// Replaced by someone else meanwhile: not removed.
	remove, err = writeKubeconfigOut(src, fresh, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(fresh); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fresh, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	remove()
	if b, _ := os.ReadFile(fresh); string(b) != "someone else's" {
		t.Errorf("a file this run did not create was removed or changed: %q", b)
	}
}

// TestReportExitCodes: the exit code follows the verdicts; a run whose
// every case was skipped judged nothing and must not exit 0.
func TestReportExitCodes(t *testing.T) {
	c := func(verdict string) scenarios.CaseResult {
		return scenarios.CaseResult{Scenario: "fast-reboot-0.5g", Subject: "bootid", Cluster: "embedded", Nodes: "simulated", NodeCount: 1,
			Expected: scenarios.Pass, Observed: verdict, Verdict: verdict, Message: "m"}
	}
	for _, tc := range []struct {
		name     string
		verdicts []string
		want     int
		wantText string
	}{
		{name: "all pass", verdicts: []string{scenarios.Pass, scenarios.Pass}, want: ExitOK},
		{name: "pass and skipped", verdicts: []string{scenarios.Pass, scenarios.Skipped}, want: ExitOK},
		{name: "a failure", verdicts: []string{scenarios.Pass, scenarios.Fail, scenarios.Skipped}, want: ExitFailed, wantText: "1 case(s) failed"},
		{name: "an error", verdicts: []string{scenarios.Fail, scenarios.Error}, want: ExitInfra, wantText: "could not be judged"},
		{name: "all skipped", verdicts: []string{scenarios.Skipped, scenarios.Skipped}, want: ExitAllSkipped, wantText: "all 2 case(s) were skipped"},
		{name: "no case", want: ExitAllSkipped, wantText: "no case ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var res scenarios.Results
			for _, v := range tc.verdicts {
				res.Cases = append(res.Cases, c(v))
			}
			var out, errb bytes.Buffer
			rc := &runContext{s: Streams{Out: &out, Err: &errb}, o: runOptions{reportDir: dir}}
			err := rc.report(context.Background(), dir, res, time.Now())
			if tc.want == ExitOK {
				if err != nil {
					t.Fatalf("report = %v, want exit 0", err)
				}
				return
			}
			if err == nil || exitCode(t, err) != tc.want || !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("report = %v, want exit %d with %q", err, tc.want, tc.wantText)
			}
		})
	}
}
