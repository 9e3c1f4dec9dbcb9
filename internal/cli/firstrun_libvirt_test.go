package cli_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/vmprovision/vmtest"
)

// firstRunTimeout bounds TestVMFirstRunEmptyCache: the guest kernel
// downloaded from the distribution's archive (about 70 MB), unpacked and
// indexed, the image built, then a TCG boot and a case with a reboot.
// Measured here: the preparation 13 s with the archive at full speed and
// 7 min 28 s behind a 150 KB/s mirror (APT_CONFIG with Acquire::http::Dl-Limit),
// the run 1 min 10 s to 1 min 26 s; the rest is for a slower mirror and a
// loaded machine.
const firstRunTimeout = 30 * time.Minute

// TestVMFirstRunEmptyCache is a first VM run on a machine whose cache is
// empty, as 'make e2e-libvirt' prepares it: 'bootproof image build' into
// an empty --cache-dir downloads the guest kernel, writes the kernel the
// domains boot and builds the initramfs with the agent as /init; run
// again, it finds all of it cached and changes nothing; then 'bootproof
// run --nodes libvirt' on that cache passes fast-reboot-0.5g with bootid
// on a VM that booted the prepared kernel, and adds nothing to the cache:
// the run found everything prepared. Nothing is left: no domain, no
// temporary directory, no process.
func TestVMFirstRunEmptyCache(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("downloads the guest kernel into an empty cache and boots a libvirt VM from it: set %s=1 (needs apt-get, dpkg-deb and depmod with the apt package lists, the go command, libvirtd and virtlogd running, qemu-system-x86_64, socat, the control-plane binaries)", vmTestEnv)
	}
	cptest.RequireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), firstRunTimeout)
	defer cancel()
	scratch := vmtest.ScratchDir(t, "firstrun") // QEMU's user reads the kernel and initrd under it
	cache, report, tmp := filepath.Join(scratch, "cache"), filepath.Join(scratch, "report"), t.TempDir()
	agent := buildAgent(ctx, t, filepath.Join(scratch, "bootproof-agent"))
	domainsBefore := map[string]bool{}
	for _, d := range bootproofDomains(t) {
		domainsBefore[d.name] = true
	}

	start := time.Now()
	out, progress := bootproof(ctx, t, tmp, "image", "build", "--agent", agent, "--cache-dir", cache)
	t.Logf("preparation into an empty cache: %s", time.Since(start).Round(time.Millisecond))
	first := parseImageBuild(t, out)
	if !strings.Contains(progress, "guest kernel: downloading it") {
		t.Errorf("the first preparation did not say it downloads the kernel before it did; stderr:\n%s", progress)
	}
	kernelPath, kernelVersion, kernelFrom := first.kernel()
	if kernelFrom != "downloaded" || first.state("image") != "built" {
		t.Errorf("first preparation: kernel %s, image %s; want downloaded and built", kernelFrom, first.state("image"))
	}
	bootKernel := first.path("boot")
	for _, p := range []string{kernelPath, bootKernel, first.path("image")} {
		if !strings.HasPrefix(p, cache+string(filepath.Separator)) {
			t.Errorf("%s is not in the cache %s", p, cache)
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			t.Errorf("prepared file %s: %v", p, err)
		}
	}
	if bootKernel == kernelPath || !strings.Contains(first["boot"], "PVH") {
		t.Errorf("boot: %q, want the uncompressed kernel at its PVH entry, as runs boot it", first["boot"])
	}
	prepared := snapshot(t, cache)

	out, progress = bootproof(ctx, t, tmp, "image", "build", "--agent", agent, "--cache-dir", cache)
	second := parseImageBuild(t, out)
	if progress != "" {
		t.Errorf("the second preparation wrote to stderr:\n%s", progress)
	}
	if _, _, from := second.kernel(); from != "cached" || second.state("image") != "cached" {
		t.Errorf("second preparation: kernel %s, image %s; want both cached", from, second.state("image"))
	}
	if second["sha256"] != first["sha256"] || second.path("image") != first.path("image") || second.path("boot") != bootKernel {
		t.Errorf("second preparation found %v, want what the first prepared: %v", second, first)
	}
	if again := snapshot(t, cache); !maps.Equal(again, prepared) {
		t.Errorf("the second preparation changed the cache:\n%s", diffSnapshots(prepared, again))
	}

	start = time.Now()
	_, progress = bootproof(ctx, t, tmp, "run", "--nodes", "libvirt", "--scenario", "fast-reboot-0.5g", "--subject", "bootid",
		"--agent", agent, "--cache-dir", cache, "--report-dir", report)
	t.Logf("run on the prepared cache: %s", time.Since(start).Round(time.Millisecond))
	if strings.Contains(progress, "downloading") {
		t.Errorf("the run downloaded the kernel again; stderr:\n%s", progress)
	}
	res, err := reports.ReadResults(filepath.Join(report, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 1 || res.Cases[0].Verdict != "pass" || res.Cases[0].Observed != "pass" {
		t.Errorf("cases %+v, want fast-reboot-0.5g with bootid observed pass", res.Cases)
	}
	if got := res.Environment["guest-kernel"]; got != kernelVersion {
		t.Errorf("the run's guest kernel %q, want the prepared %s", got, kernelVersion)
	}
	t.Logf("environment: %s", res.EnvironmentLine())
	if after := snapshot(t, cache); !maps.Equal(after, prepared) {
		t.Errorf("the run changed the prepared cache (it should have found everything there):\n%s", diffSnapshots(prepared, after))
	}
	if left := slices.DeleteFunc(bootproofDomains(t), func(d domain) bool { return domainsBefore[d.name] }); len(left) > 0 {
		t.Errorf("domains left defined: %v", left)
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "*")); len(rest) > 0 {
		t.Errorf("left in the temporary directory: %v", rest)
	}
	if left := processesUnder(t, scratch); len(left) > 0 {
		t.Errorf("still running: %v", left)
	}
}

// buildAgent builds the guest agent as 'make build-libvirt' does, static.
func buildAgent(ctx context.Context, t *testing.T, out string) string {
	t.Helper()
	root, err := vmtest.CheckoutRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/bootproof-agent")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the guest agent: %v\n%s", err, b)
	}
	return out
}

// bootproof runs this test binary as the bootproof command with TMPDIR
// tmp, requires exit 0 and returns its standard output and error.
func bootproof(ctx context.Context, t *testing.T, tmp string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1", "TMPDIR="+tmp)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bootproof %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// snapshot is every file and directory under dir with its size, mode and
// modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[p] = fmt.Sprintf("%d %s %s", info.Size(), info.Mode(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return files
}

// diffSnapshots lists what differs between two snapshots.
func diffSnapshots(a, b map[string]string) string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(a)) {
		if b[p] != a[p] {
			out = append(out, fmt.Sprintf("  %s: %q -> %q", p, a[p], b[p]))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("  %s: new (%s)", p, b[p]))
		}
	}
	return strings.Join(out, "\n")
}
