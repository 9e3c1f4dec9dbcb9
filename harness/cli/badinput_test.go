package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/harness/cli"
	"github.com/bootproof/bootproof/scenarios"
)

// TestRunRefusesLargeFiles: scenario and subject files over
// scenarios.MaxInputFileSize are refused with one line naming the flag,
// the file and the limit, before anything starts.
func TestRunRefusesLargeFiles(t *testing.T) {
	big := filepath.Join(t.TempDir(), "huge.yaml")
	data := bytes.Repeat([]byte("# padding\n"), scenarios.MaxInputFileSize/10+1)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--scenario-file", "--subject-file"} {
		var out, errb bytes.Buffer
		code := cli.Run(context.Background(), []string{"run", flag, big}, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != cli.ExitUsage || strings.Contains(msg, "\n") {
			t.Errorf("%s: exit %d, stderr %q", flag, code, msg)
		}
		for _, w := range []string{flag, big, "limit of 1 MiB"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: stderr %q lacks %q", flag, msg, w)
			}
		}
	}
}
