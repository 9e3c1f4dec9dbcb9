package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// TestRunLog: what client-go (through the context or klog's global
// logger) and controller-runtime log during a run goes to the run's log
// file, also what was logged before the file existed, and never to the
// terminal unless verbose; nothing is written after the log is closed.
func TestRunLog(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var errb bytes.Buffer
		ctx, l := openRunLog(context.Background(), verbose, 0, &errb)
		// As client-go's rest client logs a cancelled watch.
		klog.FromContext(ctx).Error(context.Canceled, "Unexpected error when reading response body")
		dir := t.TempDir()
		if err := l.attach(dir); err != nil {
			t.Fatal(err)
		}
		klog.ErrorS(errors.New("boom"), "global klog after attach")
		ctrllog.Log.WithName("crlog").Info("controller-runtime line")
		l.close()
		klog.ErrorS(errors.New("late"), "after close")

		data, err := os.ReadFile(filepath.Join(dir, RunLogFile))
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		for _, want := range []string{`"msg"="Unexpected error when reading response body" "error"="context canceled"`,
			`"msg"="global klog after attach"`, `"msg"="controller-runtime line"`, `"ts"=`} {
			if !strings.Contains(log, want) {
				t.Errorf("verbose %v: the run log lacks %s:\n%s", verbose, want, log)
			}
		}
		if strings.Contains(log, "after close") {
			t.Errorf("verbose %v: a line logged after close is in the run log", verbose)
		}
		onTerminal := strings.Contains(errb.String(), "Unexpected error when reading response body")
		if onTerminal != verbose {
			t.Errorf("verbose %v: stderr %q", verbose, errb.String())
		}
		if strings.Contains(errb.String(), "after close") {
			t.Errorf("verbose %v: a line logged after close reached stderr", verbose)
		}
	}
}

// A run log's file is new: attaching to a directory that has one fails
// naming it.
func TestRunLogRefusesExistingFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RunLogFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, l := openRunLog(context.Background(), false, 0, &bytes.Buffer{})
	defer l.close()
	if err := l.attach(dir); err == nil || !strings.Contains(err.Error(), RunLogFile) {
		t.Errorf("attach over an existing log: %v", err)
	}
}
