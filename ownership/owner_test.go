package ownership

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestOwner(t *testing.T) {
	self := Self()
	if self.PID != os.Getpid() || self.Start == 0 || !self.Alive() {
		t.Fatalf("Self() = %+v, alive %v", self, self.Alive())
	}
	back, err := ParseOwner(self.String())
	if err != nil || back != self {
		t.Errorf("ParseOwner(%q) = %+v, %v", self.String(), back, err)
	}
	if (Owner{PID: self.PID, Start: self.Start + 1}).Alive() {
		t.Error("a process with the same pid but another start time is taken for the owner")
	}
	if dead := deadPID(t); (Owner{PID: dead, Start: 1}).Alive() {
		t.Errorf("exited process %d is alive", dead)
	}
	for _, bad := range []string{"", "12", "x/1", "12/x", "0/5"} {
		if _, err := ParseOwner(bad); err == nil {
			t.Errorf("ParseOwner(%q) accepted", bad)
		}
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func TestSweepTempDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mine, err := TempDir("controlplane")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(mine); err != nil || info.Mode().Perm() != 0o700 || !tempDirName.MatchString(filepath.Base(mine)) {
		t.Fatalf("TempDir made %s (%v, %v)", mine, info, err)
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	time.Sleep(1100 * time.Millisecond) // the directories below change after the sleeper started
	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "pki"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	live := mk(fmt.Sprintf("bootproof-subject-%d-123", sleeper.Process.Pid))
	dead := mk(fmt.Sprintf("bootproof-controlplane-%d-456", deadPID(t)))
	// A live process that started after the directory last changed only
	// reuses the pid of its dead owner.
	reused := mk(fmt.Sprintf("bootproof-nodes-%d-789", sleeper.Process.Pid))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(reused, old, old); err != nil {
		t.Fatal(err)
	}
	other := mk("bootproof-notours")
	listed, err := SweepTempDirs("", true)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if want := []string{dead, reused}; !slices.Equal(listed, want) {
		t.Errorf("dry run listed %v, want %v", listed, want)
	}
	if _, err := os.Stat(dead); err != nil {
		t.Fatalf("the dry run removed %s", dead)
	}
	removed, err := SweepTempDirs("", false)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{dead, reused}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, p := range []string{mine, live, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	for _, p := range []string{dead, reused} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
}
