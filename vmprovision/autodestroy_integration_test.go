//go:build linux

package vmprovision_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/vmtest"
)

// envHoldDomain makes TestHelperHoldDomain, run in a child process, start
// a domain named by the variable and wait to be killed.
const envHoldDomain = "BOOTPROOF_TEST_HOLD_DOMAIN"

// TestHelperHoldDomain is not a test: TestLibvirtKilledOwner runs it in a
// child process that defines and starts a domain, then holds its libvirt
// connection until it is SIGKILLed.
func TestHelperHoldDomain(t *testing.T) {
	name := os.Getenv(envHoldDomain)
	if name == "" {
		t.Skip("a helper process of TestLibvirtKilledOwner, not a test")
	}
	hv, err := vmprovision.ConnectLibvirt("")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	xml, err := vmprovision.DomainXML(vmprovision.DomainSpec{Name: name, Kernel: os.Getenv("KERNEL"), Initrd: os.Getenv("INITRD"),
		SerialLog: os.Getenv("SERIAL"), ControlPort: port, Description: "owner " + strconv.Itoa(os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	dom, err := hv.Define(xml)
	if err != nil {
		t.Fatal(err)
	}
	if err := dom.Start(); err != nil {
		_ = dom.Undefine()
		t.Fatal(err)
	}
	fmt.Println("started", name)
	time.Sleep(10 * time.Minute)
}

// TestLibvirtKilledOwner: a domain whose owner process is SIGKILLed is
// stopped by libvirt (started with auto-destroy), and Sweep removes its
// definition once the owner is gone.
func TestLibvirtKilledOwner(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("starts a libvirt domain: set %s=1 (needs libvirtd and virtlogd running, qemu-system-x86_64, the guest kernel %s prepares)", vmTestEnv, vmtest.PrepareCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g := vmtest.Prepared(t) // 'make guest-image', before the test
	cache, kernel := g.Cache, g.Kernel
	// QEMU runs as its own user: the files go where the other VM tests
	// put theirs, not in the test's private temporary directory.
	dir := filepath.Join(cache, "vm", fmt.Sprintf("killed%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	initrd := filepath.Join(dir, "empty.initrd") // the kernel panics and reboots: running is all the test needs
	if err := os.WriteFile(initrd, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	name := vmprovision.DomainName(fmt.Sprintf("killed%d", os.Getpid()), "n0")
	hv, err := vmprovision.ConnectLibvirt("")
	if err != nil {
		t.Fatal(err)
	}
	defer hv.Close()
	defer func() { _, _ = hv.Sweep(name, func(string, string) bool { return true }) }()

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperHoldDomain$", "-test.v")
	child.Env = append(os.Environ(), envHoldDomain+"="+name, "KERNEL="+kernel.Vmlinuz(), "INITRD="+initrd, "SERIAL="+filepath.Join(dir, "serial.log"))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var said []string
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "started ") {
		said = append(said, sc.Text())
	}
	if len(said) > 0 && !strings.HasPrefix(sc.Text(), "started ") {
		t.Fatalf("the helper process did not start the domain:\n%s", strings.Join(said, "\n"))
	}
	if defined, active, err := hv.DomainState(name); err != nil || !defined || !active {
		t.Fatalf("before the kill: defined %v, active %v, %v", defined, active, err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		defined, active, err := hv.DomainState(name)
		if err != nil {
			t.Fatal(err)
		}
		if !active {
			if !defined {
				t.Fatal("the domain is gone entirely: the test no longer shows the sweep")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a minute after its owner was SIGKILLed the domain still runs")
		}
		time.Sleep(200 * time.Millisecond)
	}
	dead := func(_, desc string) bool {
		pid, err := strconv.Atoi(strings.TrimPrefix(desc, "owner "))
		return err == nil && syscall.Kill(pid, 0) != nil
	}
	removed, err := hv.Sweep(name, dead)
	if err != nil || len(removed) != 1 || removed[0] != name {
		t.Fatalf("Sweep removed %v, %v; want %s", removed, err, name)
	}
	if defined, _, err := hv.DomainState(name); err != nil || defined {
		t.Errorf("after the sweep: defined %v, %v", defined, err)
	}
}
