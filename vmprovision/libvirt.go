//go:build libvirt

package vmprovision

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"libvirt.org/go/libvirt"
)

// DefaultLibvirtURI is the system QEMU driver.
const DefaultLibvirtURI = "qemu:///system"

var eventLoop sync.Once

// registerEventLoop registers libvirt's default event loop (required
// before connecting, for keepalives and events) and runs it forever.
func registerEventLoop() {
	eventLoop.Do(func() {
		if err := libvirt.EventRegisterDefaultImpl(); err != nil {
			panic(fmt.Sprintf("libvirt event loop: %v", err))
		}
		go func() {
			for {
				_ = libvirt.EventRunDefaultImpl()
			}
		}()
	})
}

// Libvirt is a Hypervisor over a libvirt connection.
type Libvirt struct {
	conn *libvirt.Connect
}

var (
	_ Hypervisor = (*Libvirt)(nil)
	_ LinkSetter = (*libvirtDomain)(nil)
)

// ConnectLibvirt connects to uri (empty: DefaultLibvirtURI).
func ConnectLibvirt(uri string) (*Libvirt, error) {
	if uri == "" {
		uri = DefaultLibvirtURI
	}
	registerEventLoop()
	conn, err := libvirt.NewConnect(uri)
	if err != nil {
		return nil, fmt.Errorf("libvirt %s: %w (is libvirtd running? start it with: libvirtd -d; virtlogd -d)", uri, err)
	}
	return &Libvirt{conn: conn}, nil
}

// Define implements Hypervisor.
func (l *Libvirt) Define(xml string) (Domain, error) {
	d, err := l.conn.DomainDefineXML(xml)
	if err != nil {
		return nil, fmt.Errorf("define domain: %w", err)
	}
	name, err := d.GetName()
	if err != nil {
		return nil, fmt.Errorf("define domain: %w", err)
	}
	return &libvirtDomain{d: d, name: name}, nil
}

// Cleanup destroys and undefines every domain whose name starts with
// prefix: a run's own domains at its end (bootproof-<run>-).
func (l *Libvirt) Cleanup(prefix string) ([]string, error) {
	return l.Sweep(prefix, func(string, string) bool { return true })
}

// Sweep destroys and undefines the domains whose name starts with prefix
// and whose description dead says belongs to a process that is gone (a
// run killed before its cleanup: its domains were stopped by libvirt
// when its connection went, see Start, but stay defined). Domains of live
// runs are kept.
func (l *Libvirt) Sweep(prefix string, dead func(name, description string) bool) ([]string, error) {
	doms, err := l.conn.ListAllDomains(0)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	var removed []string
	var errs []error
	for i := range doms {
		d := &doms[i]
		name, err := d.GetName()
		if err != nil || !strings.HasPrefix(name, prefix) {
			_ = d.Free()
			continue
		}
		desc, err := d.GetMetadata(libvirt.DOMAIN_METADATA_DESCRIPTION, "", 0)
		if err != nil && !isNoMetadata(err) {
			errs = append(errs, fmt.Errorf("domain %s: read its description: %w", name, err))
			_ = d.Free()
			continue
		}
		if dead(name, desc) {
			_ = d.Destroy()
			if err := d.Undefine(); err != nil {
				errs = append(errs, fmt.Errorf("undefine %s: %w", name, err))
			} else {
				removed = append(removed, name)
			}
		}
		_ = d.Free()
	}
	return removed, errors.Join(errs...)
}

// DomainState reports whether a domain named name is defined, and
// whether it runs.
func (l *Libvirt) DomainState(name string) (defined, active bool, err error) {
	d, err := l.conn.LookupDomainByName(name)
	if err != nil {
		var le libvirt.Error
		if errors.As(err, &le) && le.Code == libvirt.ERR_NO_DOMAIN {
			return false, false, nil
		}
		return false, false, fmt.Errorf("domain %s: %w", name, err)
	}
	defer func() { _ = d.Free() }()
	active, err = d.IsActive()
	if err != nil {
		return true, false, fmt.Errorf("domain %s: %w", name, err)
	}
	return true, active, nil
}

// isNoMetadata: the domain has no description.
func isNoMetadata(err error) bool {
	var le libvirt.Error
	return errors.As(err, &le) && le.Code == libvirt.ERR_NO_DOMAIN_METADATA
}

// Close implements Hypervisor.
func (l *Libvirt) Close() error {
	_, err := l.conn.Close()
	return err
}

type libvirtDomain struct {
	d    *libvirt.Domain
	name string
}

func (d *libvirtDomain) Name() string { return d.name }

func (d *libvirtDomain) wrap(op string, err error) error {
	if err != nil {
		return fmt.Errorf("%s domain %s: %w", op, d.name, err)
	}
	return nil
}

// Start starts the domain tied to this connection: libvirt destroys it
// when the connection closes, so a run killed with SIGKILL leaves no
// guest running (its definition stays for Sweep).
func (d *libvirtDomain) Start() error {
	return d.wrap("start", d.d.CreateWithFlags(libvirt.DOMAIN_START_AUTODESTROY))
}

func (d *libvirtDomain) Reset() error   { return d.wrap("reset", d.d.Reset(0)) }
func (d *libvirtDomain) Suspend() error { return d.wrap("suspend", d.d.Suspend()) }
func (d *libvirtDomain) Resume() error  { return d.wrap("resume", d.d.Resume()) }
func (d *libvirtDomain) Destroy() error { return d.wrap("destroy", d.d.Destroy()) }

// SetLink implements LinkSetter through QEMU's set_link on the netdev
// (QEMU takes the NIC's link down with it).
func (d *libvirtDomain) SetLink(up bool) error {
	cmd := fmt.Sprintf(`{"execute":"set_link","arguments":{"name":%q,"up":%t}}`, NetdevID, up)
	out, err := d.d.QemuMonitorCommand(cmd, libvirt.DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT)
	if err != nil {
		return fmt.Errorf("set link up=%t on domain %s: %w", up, d.name, err)
	}
	if strings.Contains(out, `"error"`) {
		return fmt.Errorf("set link up=%t on domain %s: %s", up, d.name, out)
	}
	return nil
}

func (d *libvirtDomain) Undefine() error {
	err := d.wrap("undefine", d.d.Undefine())
	_ = d.d.Free()
	return err
}
