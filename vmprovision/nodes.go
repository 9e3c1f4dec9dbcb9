package vmprovision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
)

// Domain is one VM as the hypervisor manages it.
type Domain interface {
	Name() string
	Start() error
	Destroy() error
	Reset() error
	Suspend() error
	Resume() error
	Undefine() error
}

// LinkSetter is the optional capability of a Domain to take its NIC's
// link down and up (the guest sees the carrier go), for network blips.
type LinkSetter interface {
	SetLink(up bool) error
}

// Hypervisor defines domains (Libvirt, or a test's fake).
type Hypervisor interface {
	Define(xml string) (Domain, error)
	Close() error
}

// Backend is the VM node backend: one domain per node, booted from Image
// with the node's credentials.
type Backend struct {
	// Hypervisor defines the domains.
	Hypervisor Hypervisor
	// Image is the built main initramfs and its kernel.
	Image *Image
	// Kernel is the kernel image the domains boot (PVHKernel); empty
	// means the image's bzImage (Image.Kernel.Vmlinuz()).
	Kernel string
	// Firmware is the BIOS image of the domains (DomainSpec.Firmware);
	// empty means QEMU's default.
	Firmware string
	// Credentials issues the node's identity (system:node:<name>).
	Credentials func(node string) (*rest.Config, error)
	// APIServer is the API server URL as the host reaches it (e.g.
	// https://127.0.0.1:<port>). Guests reach it only through their
	// forward, as https://10.0.2.100:6443 (GuestAPIServer).
	APIServer string
	// TLSServerName, when set, is the name the guest verifies the API
	// server's certificate against; empty means APIServer's host.
	TLSServerName string
	// Forwarder is the program QEMU runs per guest connection to the API
	// server; empty means DefaultForwarder found on PATH.
	Forwarder string
	// Admin, when set, is used to wait for the Node to report a new boot.
	Admin kubernetes.Interface
	// RunID names the domains (bootproof-<run>-<node>); Dir holds the
	// initramfs and the serial logs.
	RunID string
	Dir   string
	// Owner is written into every domain's description (DomainSpec) so a
	// later sweep can tell the domains of a dead run.
	Owner string
	// KVM selects hardware acceleration.
	KVM bool
	// BootTimeout bounds one boot; default 3 minutes (TCG).
	BootTimeout time.Duration
	// BootEstimate is the natural boot time (reset to the agent answering
	// in the new boot) assumed until a node has measured its own; default
	// DefaultBootEstimateTCG or DefaultBootEstimateKVM. A reboot's
	// requested downtime is the whole time the node is down: the domain is
	// held (paused or off) for the downtime minus the node's estimate.
	BootEstimate time.Duration

	mu        sync.Mutex
	timelines []BootTimeline
}

var _ nodeapi.NodeBackend = (*Backend)(nil)

// BootTimelines returns the timelines of the reboots of every node set of
// the backend so far whose agent reported its boot's milestones, in the
// order the reboots completed.
func (b *Backend) BootTimelines() []BootTimeline {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.timelines)
}

func (b *Backend) addTimeline(t BootTimeline) {
	b.mu.Lock()
	b.timelines = append(b.timelines, t)
	b.mu.Unlock()
}

// Name implements nodeapi.NodeBackend.
func (b *Backend) Name() string { return "libvirt" }

// ReadGroundTruth decodes the ground truth a VM's kubelet (the guest's
// lightweight kubelet, over its real kernel) published on its Lease; nil
// when none yet.
func (b *Backend) ReadGroundTruth(l *coordinationv1.Lease) (*contract.GroundTruth, error) {
	return contract.ReadGroundTruth(l)
}

// vmNode is one running VM node.
type vmNode struct {
	name   string
	dom    Domain
	ctlURL string
	secret string // the agent's secret, sent with every request
	serial string

	mu   sync.Mutex
	boot time.Duration // the last measured natural boot, 0 until one is
}

// NodeSet is a case's VMs.
type NodeSet struct {
	b      *Backend
	log    logr.Logger
	client *http.Client
	mu     sync.Mutex
	nodes  map[string]*vmNode
}

var (
	_ nodeapi.NodeSet          = (*NodeSet)(nil)
	_ nodeapi.RebootModes      = (*NodeSet)(nil)
	_ nodeapi.RebootChecker    = (*NodeSet)(nil)
	_ nodeapi.NodePauser       = (*NodeSet)(nil)
	_ nodeapi.KubeletRestarter = (*NodeSet)(nil)
	_ nodeapi.NetworkBlipper   = (*NodeSet)(nil)
	_ nodeapi.PodRejecter      = (*NodeSet)(nil)
)

// Provision implements nodeapi.NodeBackend: it writes each node's
// initramfs, defines and starts its domain and waits for its agent.
func (b *Backend) Provision(ctx context.Context, req nodeapi.ProvisionRequest) (_ nodeapi.NodeSet, retErr error) {
	if b.BootTimeout == 0 {
		b.BootTimeout = 3 * time.Minute
	}
	if b.BootEstimate == 0 {
		b.BootEstimate = DefaultBootEstimateTCG
		if b.KVM {
			b.BootEstimate = DefaultBootEstimateKVM
		}
	}
	ns := &NodeSet{b: b, log: logr.FromContextOrDiscard(ctx), client: &http.Client{Timeout: 5 * time.Second}, nodes: map[string]*vmNode{}}
	defer func() {
		if retErr != nil {
			_ = ns.Close()
		}
	}()
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("provision vms: %w", err)
	}
	guest, err := b.guestNetwork()
	if err != nil {
		return nil, err
	}
	for _, name := range req.Names {
		n, err := b.defineNode(name, req, guest)
		if err != nil {
			return nil, err
		}
		ns.mu.Lock()
		ns.nodes[name] = n
		ns.mu.Unlock()
		if err := n.dom.Start(); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	for _, name := range req.Names {
		st, _, err := ns.waitBoot(ctx, ns.nodes[name], "")
		if err != nil {
			return nil, err
		}
		ns.log.Info("vm node up", "node", name, "bootID", st.BootID, "kernel", st.KernelVersion)
	}
	return ns, nil
}

// guestNet is how every node of a backend reaches the API server.
type guestNet struct {
	url, serverName string // in the guest
	target          string // host:port the forward connects to
	forwarder       string
}

func (b *Backend) guestNetwork() (guestNet, error) {
	var g guestNet
	var err error
	if g.url, g.serverName, g.target, err = GuestAPIServer(b.APIServer); err != nil {
		return g, fmt.Errorf("provision vms: %w", err)
	}
	if b.TLSServerName != "" {
		g.serverName = b.TLSServerName
	}
	g.forwarder = b.Forwarder
	if g.forwarder == "" {
		if g.forwarder, err = exec.LookPath(DefaultForwarder); err != nil {
			return g, fmt.Errorf("provision vms: the guests' API server forward needs %s on the host (hack/deps-libvirt.sh installs it): %w", DefaultForwarder, err)
		}
	}
	return g, nil
}

// defineNode makes the node's secret, writes its initramfs and defines
// its domain.
func (b *Backend) defineNode(name string, req nodeapi.ProvisionRequest, g guestNet) (*vmNode, error) {
	rc, err := b.Credentials(name)
	if err != nil {
		return nil, fmt.Errorf("node %s: credentials: %w", name, err)
	}
	secret, err := agentapi.NewSecret()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	cfg := guest.AgentConfig{NodeName: name, APIServer: g.url, TLSServerName: g.serverName, Timing: req.Timing, Labels: req.Labels,
		CAData: string(rc.CAData), CertData: string(rc.CertData), KeyData: string(rc.KeyData), ControlSecret: secret}
	initrd := filepath.Join(b.Dir, name+".initrd")
	if err := WriteBootInitramfs(initrd, b.Image, cfg); err != nil {
		return nil, err
	}
	port, err := freeLocalPort()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	n := &vmNode{name: name, ctlURL: fmt.Sprintf("http://127.0.0.1:%d", port), secret: secret, serial: filepath.Join(b.Dir, name+".serial.log")}
	kernel := b.Kernel
	if kernel == "" {
		kernel = b.Image.Kernel.Vmlinuz()
	}
	xml, err := DomainXML(DomainSpec{Name: DomainName(b.RunID, name), Kernel: kernel, Initrd: initrd, Firmware: b.Firmware,
		SerialLog: n.serial, ControlPort: port, KVM: b.KVM, APIServer: g.target, Forwarder: g.forwarder, Description: b.Owner})
	if err != nil {
		return nil, err
	}
	if n.dom, err = b.Hypervisor.Define(xml); err != nil {
		return nil, fmt.Errorf("node %s: define domain: %w", name, err)
	}
	return n, nil
}

// ControlAddress is the host address (127.0.0.1:port) forwarded to the
// node's agent.
func (ns *NodeSet) ControlAddress(node string) (string, error) {
	n, err := ns.node(node)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(n.ctlURL, "http://"), nil
}

func freeLocalPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (ns *NodeSet) node(name string) (*vmNode, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	n, ok := ns.nodes[name]
	if !ok {
		return nil, fmt.Errorf("vm node %s: not in this node set", name)
	}
	return n, nil
}

// Close implements nodeapi.NodeSet: every domain is destroyed and
// undefined.
func (ns *NodeSet) Close() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var errs []error
	for name, n := range ns.nodes {
		if n.dom == nil {
			continue
		}
		_ = n.dom.Destroy() // may already be off
		if err := n.dom.Undefine(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: undefine %s: %w", name, n.dom.Name(), err))
		}
		delete(ns.nodes, name)
	}
	return errors.Join(errs...)
}
