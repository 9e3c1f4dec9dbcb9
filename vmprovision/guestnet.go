package vmprovision

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/bootproof/bootproof/vmprovision/guest"
)

// A guest reaches the host only through what QEMU's user-mode network
// forwards for it. The netdev is restricted (restrict=on): the guest can
// contact neither the host (10.0.2.2 is not the host's loopback any more)
// nor anything beyond it. One guestfwd rule is the exception: a TCP
// connection to GuestAPIServerAddress:GuestAPIServerPort makes QEMU run
// the forwarder (DefaultForwarder, socat) with the connection as its
// stdin and stdout, and the forwarder connects to the API server as the
// host reaches it. Inbound, hostfwd still forwards the agent's control
// port from 127.0.0.1 on the host.
const (
	GuestAPIServerAddress = "10.0.2.100"
	GuestAPIServerPort    = 6443
	// DefaultForwarder is the program QEMU runs per guest connection to
	// the API server (package socat; hack/deps-libvirt.sh installs it).
	DefaultForwarder = "socat"
)

// guestSandbox is the seccomp sandbox of a domain with an API forward:
// libvirt's default (-sandbox on,obsolete=deny,elevateprivileges=deny,
// spawn=deny,resourcecontrol=deny) kills QEMU's guestfwd child, which
// calls setsid and exec, so the domain asks libvirt not to add its own
// and adds this one, the same except that spawning (and the child's
// setsid) is allowed. QEMU runs as libvirt's unprivileged QEMU user.
const guestSandbox = "on,obsolete=deny,elevateprivileges=allow,spawn=allow,resourcecontrol=deny"

// GuestAPIServer maps the API server URL as the host reaches it to the
// guest's view: the URL the guest uses (https://10.0.2.100:6443 plus the
// host URL's path), the name the guest verifies the API server's
// certificate against (the host URL's host), and the host:port the
// forward connects to.
func GuestAPIServer(hostURL string) (guestURL, serverName, target string, err error) {
	u, err := url.Parse(hostURL)
	if err != nil || u.Host == "" {
		return "", "", "", fmt.Errorf("api server %q: not a URL", hostURL)
	}
	if u.Scheme != "https" {
		return "", "", "", fmt.Errorf("api server %q: want https://host:port", hostURL)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	target = net.JoinHostPort(u.Hostname(), port)
	if err := checkForwardTarget(target); err != nil {
		return "", "", "", err
	}
	g := url.URL{Scheme: "https", Host: net.JoinHostPort(GuestAPIServerAddress, strconv.Itoa(GuestAPIServerPort)), Path: strings.TrimSuffix(u.Path, "/")}
	return g.String(), u.Hostname(), target, nil
}

var (
	// forwardTarget is host:port that needs no quoting on QEMU's command
	// line (no comma) nor in the forwarder's argv (no space).
	forwardTarget = regexp.MustCompile(`^([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$`)
	forwarderPath = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)
)

func checkForwardTarget(target string) error {
	if !forwardTarget.MatchString(target) {
		return fmt.Errorf("api server forward target %q: want host:port (letters, digits, . _ - or [IPv6])", target)
	}
	return nil
}

// NetdevSpec is a node's user-mode network: what QEMU forwards in and
// out.
type NetdevSpec struct {
	// ID is the netdev id; empty means NetdevID.
	ID string
	// ControlPort is the host port (on 127.0.0.1) forwarded to the
	// agent's GuestControlPort (0: guest.DefaultAgentControlPort).
	ControlPort      int
	GuestControlPort int
	// APIServer is the host:port the guest's connections to
	// GuestAPIServerAddress:GuestAPIServerPort are forwarded to; empty
	// means the guest reaches nothing on the host.
	APIServer string
	// Forwarder is the program QEMU runs per forwarded connection; empty
	// means DefaultForwarder.
	Forwarder string
}

// Netdev renders the -netdev value: a restricted user-mode network with
// the control port forwarded in and, with an APIServer, the API server
// forwarded out.
func (s NetdevSpec) Netdev() (string, error) {
	if s.ID == "" {
		s.ID = NetdevID
	}
	if s.GuestControlPort == 0 {
		s.GuestControlPort = guest.DefaultAgentControlPort
	}
	if s.Forwarder == "" {
		s.Forwarder = DefaultForwarder
	}
	if s.ControlPort <= 0 || s.ControlPort > 65535 {
		return "", fmt.Errorf("control port %d out of range", s.ControlPort)
	}
	v := fmt.Sprintf("user,id=%s,restrict=on,hostfwd=tcp:127.0.0.1:%d-:%d", s.ID, s.ControlPort, s.GuestControlPort)
	if s.APIServer == "" {
		return v, nil
	}
	if err := checkForwardTarget(s.APIServer); err != nil {
		return "", err
	}
	if !forwarderPath.MatchString(s.Forwarder) {
		return "", fmt.Errorf("forwarder %q: want a path without spaces or commas", s.Forwarder)
	}
	return v + fmt.Sprintf(",guestfwd=tcp:%s:%d-cmd:%s STDIO TCP:%s", GuestAPIServerAddress, GuestAPIServerPort, s.Forwarder, s.APIServer), nil
}
