//go:build linux

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/bootproof/bootproof/vmprovision/guest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// mountPseudoFS mounts /proc, /sys and /dev (devtmpfs); one already
// mounted is fine.
func mountPseudoFS() error {
	var errs []error
	for _, m := range []struct{ src, dir, fstype string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("mkdir %s: %w", m.dir, err))
			continue
		}
		err := unix.Mount(m.src, m.dir, m.fstype, unix.MS_NOSUID|unix.MS_NOEXEC, "")
		if err != nil && !errors.Is(err, unix.EBUSY) {
			errs = append(errs, fmt.Errorf("mount %s on %s: %w", m.fstype, m.dir, err))
		}
	}
	return errors.Join(errs...)
}

// setupNetwork brings up lo and the NIC with a static address and a
// default route, waiting for the NIC to appear (its driver was just
// loaded).
func setupNetwork(ctx context.Context, n guest.Network) error {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	var link netlink.Link
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		link, err = netlink.LinkByName(n.Interface)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("network: interface %s did not appear: %w", n.Interface, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("network: interface %s: %w", n.Interface, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	addr, err := netlink.ParseAddr(n.Address)
	if err != nil {
		return fmt.Errorf("network: address %s: %w", n.Address, err)
	}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("network: add %s to %s: %w", n.Address, n.Interface, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("network: set %s up: %w", n.Interface, err)
	}
	gw := net.ParseIP(n.Gateway)
	_, all, _ := net.ParseCIDR("0.0.0.0/0")
	if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: all, Gw: gw}); err != nil {
		return fmt.Errorf("network: default route via %s on %s: %w", n.Gateway, n.Interface, err)
	}
	return nil
}

// rebootNow syncs and restarts the machine with reboot(2).
func rebootNow() error {
	if os.Getpid() != 1 {
		return fmt.Errorf("reboot: %w (refusing to reboot the host)", errNotPID1)
	}
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART); err != nil {
		return fmt.Errorf("reboot(2): %w", err)
	}
	return nil
}
