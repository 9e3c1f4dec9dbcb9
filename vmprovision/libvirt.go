package vmprovision

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/digitalocean/go-libvirt"
)

// DefaultLibvirtURI is the system QEMU driver.
const DefaultLibvirtURI = "qemu:///system"

// Libvirt is a Hypervisor over a libvirt connection. It speaks libvirt's
// RPC protocol in Go (github.com/digitalocean/go-libvirt): no cgo and no
// libvirt headers, so every bootproof binary drives VMs and shares one
// compile with the rest.
type Libvirt struct {
	l *libvirt.Libvirt
}

var (
	_ Hypervisor = (*Libvirt)(nil)
	_ LinkSetter = (*libvirtDomain)(nil)
)

// ConnectLibvirt connects to uri (empty: DefaultLibvirtURI). A local URI
// (qemu:///system, qemu:///session) without a socket parameter uses the
// first daemon socket that exists: libvirtd's, then virtqemud's (modular
// daemons). Remote URIs (qemu+ssh://, qemu+tcp://, qemu+tls://) are
// dialled as libvirt's own client does.
func ConnectLibvirt(uri string) (*Libvirt, error) {
	if uri == "" {
		uri = DefaultLibvirtURI
	}
	u, err := ParseLibvirtURI(uri)
	if err != nil {
		return nil, err
	}
	if err := localSocket(u); err != nil {
		return nil, fmt.Errorf("libvirt %s: %w", uri, err)
	}
	l, err := libvirt.ConnectToURI(u)
	if err != nil {
		return nil, fmt.Errorf("libvirt %s: %w (is libvirtd running? start it with: libvirtd -d; virtlogd -d)", uri, err)
	}
	return &Libvirt{l: l}, nil
}

// ParseLibvirtURI parses a libvirt connection URI (driver[+transport]://
// [host]/path), refusing one without a scheme or path.
func ParseLibvirtURI(uri string) (*url.URL, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" || u.Path == "" {
		return nil, fmt.Errorf("libvirt URI %q: not a libvirt URI: accepted: driver[+transport]://[host]/path, e.g. %s or qemu+ssh://host/system", uri, DefaultLibvirtURI)
	}
	return u, nil
}

// localSocket sets the socket parameter of a local URI to the daemon
// socket that exists, or says which it looked for.
func localSocket(u *url.URL) error {
	if u.Host != "" || (strings.Contains(u.Scheme, "+") && !strings.HasSuffix(u.Scheme, "+unix")) || u.Query().Get("socket") != "" {
		return nil
	}
	var dir string
	switch u.Path {
	case "/system":
		dir = "/var/run/libvirt"
	case "/session":
		runtime := os.Getenv("XDG_RUNTIME_DIR")
		if runtime == "" {
			return errors.New("a session URI needs XDG_RUNTIME_DIR (or give the socket: ?socket=PATH)")
		}
		dir = filepath.Join(runtime, "libvirt")
	default:
		return nil
	}
	var tried []string
	for _, name := range []string{"libvirt-sock", "virtqemud-sock"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().Type() == os.ModeSocket {
			q := u.Query()
			q.Set("socket", p)
			u.RawQuery = q.Encode()
			return nil
		}
		tried = append(tried, p)
	}
	return fmt.Errorf("no daemon socket (looked for %s; is libvirtd running? start it with: libvirtd -d; virtlogd -d)", strings.Join(tried, ", "))
}

// Define implements Hypervisor.
func (l *Libvirt) Define(xml string) (Domain, error) {
	d, err := l.l.DomainDefineXML(xml)
	if err != nil {
		return nil, fmt.Errorf("define domain: %w", err)
	}
	return &libvirtDomain{l: l.l, d: d}, nil
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
	doms, _, err := l.l.ConnectListAllDomains(1, 0)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	var removed []string
	var errs []error
	for _, d := range doms {
		if !strings.HasPrefix(d.Name, prefix) {
			continue
		}
		desc, err := l.l.DomainGetMetadata(d, int32(libvirt.DomainMetadataDescription), nil, 0)
		if err != nil && !isLibvirtError(err, libvirt.ErrNoDomainMetadata) {
			errs = append(errs, fmt.Errorf("domain %s: read its description: %w", d.Name, err))
			continue
		}
		if dead(d.Name, desc) {
			_ = l.l.DomainDestroy(d)
			if err := l.l.DomainUndefine(d); err != nil {
				errs = append(errs, fmt.Errorf("undefine %s: %w", d.Name, err))
			} else {
				removed = append(removed, d.Name)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// DomainState reports whether a domain named name is defined, and
// whether it runs.
func (l *Libvirt) DomainState(name string) (defined, active bool, err error) {
	d, err := l.l.DomainLookupByName(name)
	if err != nil {
		if isLibvirtError(err, libvirt.ErrNoDomain) {
			return false, false, nil
		}
		return false, false, fmt.Errorf("domain %s: %w", name, err)
	}
	a, err := l.l.DomainIsActive(d)
	if err != nil {
		return true, false, fmt.Errorf("domain %s: %w", name, err)
	}
	return true, a == 1, nil
}

// isLibvirtError reports whether err is libvirt's error code.
func isLibvirtError(err error, code libvirt.ErrorNumber) bool {
	var le libvirt.Error
	return errors.As(err, &le) && le.Code == uint32(code)
}

// Close implements Hypervisor.
func (l *Libvirt) Close() error {
	return l.l.Disconnect()
}

type libvirtDomain struct {
	l *libvirt.Libvirt
	d libvirt.Domain
}

func (d *libvirtDomain) Name() string { return d.d.Name }

func (d *libvirtDomain) wrap(op string, err error) error {
	if err != nil {
		return fmt.Errorf("%s domain %s: %w", op, d.d.Name, err)
	}
	return nil
}

// Start starts the domain tied to this connection: libvirt destroys it
// when the connection closes, so a run killed with SIGKILL leaves no
// guest running (its definition stays for Sweep).
func (d *libvirtDomain) Start() error {
	_, err := d.l.DomainCreateWithFlags(d.d, uint32(libvirt.DomainStartAutodestroy))
	return d.wrap("start", err)
}

func (d *libvirtDomain) Reset() error   { return d.wrap("reset", d.l.DomainReset(d.d, 0)) }
func (d *libvirtDomain) Suspend() error { return d.wrap("suspend", d.l.DomainSuspend(d.d)) }
func (d *libvirtDomain) Resume() error  { return d.wrap("resume", d.l.DomainResume(d.d)) }
func (d *libvirtDomain) Destroy() error { return d.wrap("destroy", d.l.DomainDestroy(d.d)) }

// SetLink implements LinkSetter through QEMU's set_link on the netdev
// (QEMU takes the NIC's link down with it).
func (d *libvirtDomain) SetLink(up bool) error {
	cmd := fmt.Sprintf(`{"execute":"set_link","arguments":{"name":%q,"up":%t}}`, NetdevID, up)
	out, err := d.l.QEMUDomainMonitorCommand(d.d, cmd, 0)
	if err != nil {
		return fmt.Errorf("set link up=%t on domain %s: %w", up, d.d.Name, err)
	}
	if strings.Contains(out, `"error"`) {
		return fmt.Errorf("set link up=%t on domain %s: %s", up, d.d.Name, out)
	}
	return nil
}

func (d *libvirtDomain) Undefine() error { return d.wrap("undefine", d.l.DomainUndefine(d.d)) }
