package vmprovision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
)

// AgentBootLogLine is what the agent writes to the console once it runs
// (its first log line of a boot).
const AgentBootLogLine = `bootproof-agent  "level"=0 "msg"="boot"`

// ProbeKVM boots one throw-away domain with KVM and reports whether the
// agent started within timeout; /dev/kvm missing is false without a boot.
// On hosts where KVM guests hang it returns false, and the caller uses TCG.
// The domain is removed before it returns.
func ProbeKVM(ctx context.Context, hv Hypervisor, img *Image, dir, owner string, timeout time.Duration) (bool, error) {
	if _, err := os.Stat("/dev/kvm"); err != nil {
		return false, nil
	}
	const pem = "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"
	secret, err := agentapi.NewSecret()
	if err != nil {
		return false, fmt.Errorf("kvm probe: %w", err)
	}
	// The probe reaches nothing: no API server forward.
	cfg := guest.AgentConfig{NodeName: "kvm-probe", APIServer: "https://" + GuestAPIServerAddress + ":1", CAData: pem, CertData: pem, KeyData: pem, ControlSecret: secret}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("kvm probe: %w", err)
	}
	initrd, serial := filepath.Join(dir, "kvm-probe.initrd"), filepath.Join(dir, "kvm-probe.serial.log")
	defer os.Remove(initrd)
	if err := WriteBootInitramfs(initrd, img, cfg); err != nil {
		return false, fmt.Errorf("kvm probe: %w", err)
	}
	port, err := freeLocalPort()
	if err != nil {
		return false, fmt.Errorf("kvm probe: %w", err)
	}
	xml, err := DomainXML(DomainSpec{Name: DomainName(fmt.Sprintf("probe%d", os.Getpid()), "kvm"), Kernel: img.Kernel.Vmlinuz(),
		Initrd: initrd, SerialLog: serial, ControlPort: port, KVM: true, Description: owner})
	if err != nil {
		return false, fmt.Errorf("kvm probe: %w", err)
	}
	dom, err := hv.Define(xml)
	if err != nil {
		return false, fmt.Errorf("kvm probe: %w", err)
	}
	defer func() {
		_ = dom.Destroy()
		_ = dom.Undefine()
	}()
	if err := dom.Start(); err != nil {
		return false, nil // KVM refused: use TCG
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(serial); err == nil && strings.Contains(string(b), AgentBootLogLine) {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("kvm probe: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false, nil
}
