package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/internal/cli"
)

// runInProcess runs a command line in this process; it returns the exit
// code, stdout and stderr.
func runInProcess(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestImageBuildCommand: 'image build' says what it prepared and where
// each part came from, and a second run finds the image cached.
func TestImageBuildCommand(t *testing.T) {
	cache := t.TempDir()
	kernelDir, err := filepath.Abs("../../vmprovision/testdata/image/kernel")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"image", "build", "--kernel-dir", kernelDir, "--agent", "../../vmprovision/testdata/image/agent/bootproof-agent",
		"--module", "dummy", "--cache-dir", cache}
	code, out, errOut := runInProcess(args...)
	if code != 0 {
		t.Fatalf("image build: exit %d\n%s%s", code, out, errOut)
	}
	first := parseImageBuild(t, out)
	if errOut != "" {
		t.Errorf("image build with a given kernel wrote to stderr (nothing to download):\n%s", errOut)
	}
	if path, version, from := first.kernel(); path != filepath.Join(kernelDir, "boot", "vmlinuz-6.1.0-test-amd64") || version != "6.1.0-test-amd64" || from != "given" {
		t.Errorf("kernel line %q: want the given tree's bzImage, its version, given", first["kernel"])
	}
	if first.state("image") != "built" || filepath.Dir(first.path("image")) != filepath.Join(cache, "images") {
		t.Errorf("image line %q: want built into %s/images", first["image"], cache)
	}
	if !strings.HasPrefix(first.state("boot"), "the bzImage: ") || first.path("boot") != first.path("kernel") {
		t.Errorf("boot line %q: want the bzImage and why (the test kernel has no PVH entry)", first["boot"])
	}
	if first["modules"] != "dummy" || len(first["sha256"]) != 64 {
		t.Errorf("modules %q, sha256 %q", first["modules"], first["sha256"])
	}
	code, out, errOut = runInProcess(args...)
	if code != 0 {
		t.Fatalf("image build again: exit %d\n%s%s", code, out, errOut)
	}
	if second := parseImageBuild(t, out); second.state("image") != "cached" || second.path("image") != first.path("image") || second["sha256"] != first["sha256"] {
		t.Errorf("second image build: %v, want the first's image, cached: %v", second, first)
	}
}

// imageBuild is the output of 'bootproof image build': its "key: value"
// lines.
type imageBuild map[string]string

func parseImageBuild(t *testing.T, out string) imageBuild {
	t.Helper()
	b := imageBuild{}
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("image build printed %q, not key: value", line)
		}
		b[k] = strings.TrimSpace(v)
	}
	for _, k := range []string{"kernel", "boot", "image", "sha256", "modules"} {
		if b[k] == "" {
			t.Fatalf("image build printed no %s line:\n%s", k, out)
		}
	}
	return b
}

// path is a line's path: what comes before " (".
func (b imageBuild) path(key string) string {
	p, _, _ := strings.Cut(b[key], " (")
	return p
}

// state is a line's parenthesis: "built", "cached", "6.1.0-57-amd64, downloaded".
func (b imageBuild) state(key string) string {
	_, s, _ := strings.Cut(b[key], " (")
	return strings.TrimSuffix(s, ")")
}

// kernel is the kernel line: bzImage path, version, and where it came from.
func (b imageBuild) kernel() (path, version, from string) {
	version, from, _ = strings.Cut(b.state("kernel"), ", ")
	return b.path("kernel"), version, from
}
