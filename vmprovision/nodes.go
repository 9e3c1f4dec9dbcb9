package vmprovision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/scenarios"
)

// Reboot modes of a VM node.
const (
	RebootReset      = "reset"       // hard reset
	RebootGuest      = "guest"       // the agent calls reboot(2)
	RebootPanic      = "panic"       // kernel panic via sysrq, panic=1
	RebootPowerCycle = "power-cycle" // destroy, stay off, start
)

// RebootModeNames are the modes a VM NodeSet supports. Pausing a node
// without a reboot (the negative control) is NodeSet.PauseNode.
var RebootModeNames = []string{RebootReset, RebootGuest, RebootPanic, RebootPowerCycle}

// Default natural boot times (reset to the agent answering in the new
// boot) until a node has measured its own.
const (
	DefaultBootEstimateTCG = 7 * time.Second
	DefaultBootEstimateKVM = 2 * time.Second
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

// Hypervisor defines domains; the libvirt implementation is behind the
// libvirt build tag.
type Hypervisor interface {
	Define(xml string) (Domain, error)
	Close() error
}

// AgentState is the guest agent's GET /state answer.
type AgentState struct {
	BootID        string   `json:"bootID"`
	KernelVersion string   `json:"kernelVersion"`
	Modules       []string `json:"modules"`
}

// Backend is the VM node backend: one domain per node, booted from Image
// with the node's credentials.
type Backend struct {
	// Hypervisor defines the domains.
	Hypervisor Hypervisor
	// Image is the built main initramfs and its kernel.
	Image *Image
	// Credentials issues the node's identity (system:node:<name>).
	Credentials func(node string) (*rest.Config, error)
	// APIServer is the API server URL as the guest reaches it (e.g.
	// https://10.0.2.2:<port>).
	APIServer string
	// TLSServerName, when set, is the name the guest verifies the API
	// server's certificate against (the host's name for it, when
	// APIServer rewrites a loopback address to 10.0.2.2).
	TLSServerName string
	// Admin, when set, is used to wait for the Node to report a new boot.
	Admin kubernetes.Interface
	// RunID names the domains (bootproof-<run>-<node>); Dir holds the
	// initramfs and the serial logs.
	RunID string
	Dir   string
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
}

var _ scenarios.NodeBackend = (*Backend)(nil)

// Name implements scenarios.NodeBackend.
func (b *Backend) Name() string { return "libvirt" }

// vmNode is one running VM node.
type vmNode struct {
	name   string
	dom    Domain
	ctlURL string
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
	_ scenarios.NodeSet          = (*NodeSet)(nil)
	_ scenarios.RebootModes      = (*NodeSet)(nil)
	_ scenarios.RebootChecker    = (*NodeSet)(nil)
	_ scenarios.NodePauser       = (*NodeSet)(nil)
	_ scenarios.KubeletRestarter = (*NodeSet)(nil)
	_ scenarios.NetworkBlipper   = (*NodeSet)(nil)
)

// Provision implements scenarios.NodeBackend: it writes each node's
// initramfs, defines and starts its domain and waits for its agent.
func (b *Backend) Provision(ctx context.Context, req scenarios.ProvisionRequest) (_ scenarios.NodeSet, retErr error) {
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
	for _, name := range req.Names {
		rc, err := b.Credentials(name)
		if err != nil {
			return nil, fmt.Errorf("node %s: credentials: %w", name, err)
		}
		cfg := AgentConfig{NodeName: name, APIServer: b.APIServer, TLSServerName: b.TLSServerName, Timing: req.Timing, Labels: req.Labels,
			CAData: string(rc.CAData), CertData: string(rc.CertData), KeyData: string(rc.KeyData)}
		initrd := filepath.Join(b.Dir, name+".initrd")
		if err := WriteBootInitramfs(initrd, b.Image, cfg); err != nil {
			return nil, err
		}
		port, err := freeLocalPort()
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		n := &vmNode{name: name, ctlURL: fmt.Sprintf("http://127.0.0.1:%d", port), serial: filepath.Join(b.Dir, name+".serial.log")}
		xml, err := DomainXML(DomainSpec{Name: DomainName(b.RunID, name), Kernel: b.Image.Kernel.Vmlinuz(), Initrd: initrd,
			SerialLog: n.serial, ControlPort: port, KVM: b.KVM})
		if err != nil {
			return nil, err
		}
		if n.dom, err = b.Hypervisor.Define(xml); err != nil {
			return nil, fmt.Errorf("node %s: define domain: %w", name, err)
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

func freeLocalPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RebootModes implements scenarios.RebootModes.
func (ns *NodeSet) RebootModes() []string { return slices.Clone(RebootModeNames) }

// State asks the node's agent for its boot ID and module table.
func (ns *NodeSet) State(ctx context.Context, node string) (AgentState, error) {
	n, err := ns.node(node)
	if err != nil {
		return AgentState{}, err
	}
	return ns.state(ctx, n)
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

func (ns *NodeSet) state(ctx context.Context, n *vmNode) (AgentState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.ctlURL+"/state", nil)
	if err != nil {
		return AgentState{}, err
	}
	resp, err := ns.client.Do(req)
	if err != nil {
		return AgentState{}, fmt.Errorf("node %s: agent state: %w", n.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return AgentState{}, fmt.Errorf("node %s: agent state: %s", n.name, resp.Status)
	}
	var s AgentState
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return AgentState{}, fmt.Errorf("node %s: agent state: %w", n.name, err)
	}
	return s, nil
}

func (ns *NodeSet) post(ctx context.Context, n *vmNode, path string) error {
	return ns.postLong(ctx, n, path, ns.client.Timeout)
}

// postLong posts to the agent, waiting up to timeout for its answer.
func (ns *NodeSet) postLong(ctx context.Context, n *vmNode, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.ctlURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: agent %s: %w", n.name, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("agent %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// LoadModule asks the node's agent to load a module like modprobe (for
// checks; the subject's worker pods are the real path).
func (ns *NodeSet) LoadModule(ctx context.Context, node, module string) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, n.ctlURL+"/modules/"+module, nil)
	if err != nil {
		return err
	}
	resp, err := ns.client.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: load module %s: %w", node, module, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("node %s: load module %s: %s", node, module, resp.Status)
	}
	return nil
}

// waitBoot waits until the agent answers with a boot ID other than
// notBoot and, with an admin client, the Node reports it.
func (ns *NodeSet) waitBoot(ctx context.Context, n *vmNode, notBoot string) (AgentState, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, ns.b.BootTimeout)
	defer cancel()
	var st AgentState
	var err error
	for {
		// A short timeout per poll: while the guest boots, QEMU accepts the
		// forwarded connection but nothing answers.
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		st, err = ns.state(pctx, n)
		pcancel()
		if err == nil && st.BootID != notBoot {
			break
		}
		select {
		case <-ctx.Done():
			return AgentState{}, time.Time{}, fmt.Errorf("node %s: no new boot after %q (serial log %s): %w", n.name, notBoot, n.serial, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
	agentUp := time.Now()
	if ns.b.Admin == nil {
		return st, agentUp, nil
	}
	for {
		node, err := ns.b.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && node.Status.NodeInfo.BootID == st.BootID {
			return st, agentUp, nil
		}
		select {
		case <-ctx.Done():
			return AgentState{}, time.Time{}, fmt.Errorf("node %s: Node does not report boot %s: %w", n.name, st.BootID, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leaseVersion is the node's Lease resourceVersion ("" without an admin
// client or a Lease).
func (ns *NodeSet) leaseVersion(ctx context.Context, n *vmNode) string {
	if ns.b.Admin == nil {
		return ""
	}
	l, err := ns.b.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return l.ResourceVersion
}

// waitRenewed waits, with an admin client, until the node writes its
// Lease again (resourceVersion other than rv; the lightweight kubelet
// writes it only to renew): the node reaches the API server again. The
// guest's clock is not compared: a paused guest's clock lags.
func (ns *NodeSet) waitRenewed(ctx context.Context, n *vmNode, rv string) error {
	if ns.b.Admin == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ns.b.BootTimeout)
	defer cancel()
	for {
		l, err := ns.b.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && l.ResourceVersion != rv {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: Lease not renewed since resourceVersion %s (serial log %s): %w", n.name, rv, n.serial, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// hold keeps a domain paused for d.
func hold(ctx context.Context, dom Domain, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := dom.Suspend(); err != nil {
		return fmt.Errorf("pause %s: %w", dom.Name(), err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if err := dom.Resume(); err != nil {
		return fmt.Errorf("resume %s: %w", dom.Name(), err)
	}
	return ctx.Err()
}

// CheckReboot implements scenarios.RebootChecker: a VM boots the kernel
// of its image and its kubelet starts Ready at once.
func (ns *NodeSet) CheckReboot(r scenarios.RebootRequest) error {
	switch {
	case r.KernelVersion != "":
		return fmt.Errorf("booting another kernel version (%s) is not supported by vm nodes: they boot the image's kernel", r.KernelVersion)
	case r.NotReadyFor > 0:
		return fmt.Errorf("a Ready=False blip at kubelet startup (%s) is not supported by vm nodes", r.NotReadyFor)
	case r.Mode != "" && !slices.Contains(RebootModeNames, r.Mode):
		return fmt.Errorf("unknown mode %q: accepted: %s", r.Mode, strings.Join(RebootModeNames, ", "))
	}
	return nil
}

// bootEstimate is the node's expected natural boot time.
func (ns *NodeSet) bootEstimate(n *vmNode) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.boot > 0 {
		return n.boot
	}
	return ns.b.BootEstimate
}

// Reboot implements scenarios.NodeSet. r.Downtime is the whole time the
// node is down: the domain is held paused after a reset, guest reboot or
// panic (off, for power-cycle) for the downtime minus the node's natural
// boot time, measured on its previous reboot. A downtime shorter than the
// natural boot gives the natural boot. The outcome carries the downtime
// as measured: from the reboot to the Node reporting the new boot.
func (ns *NodeSet) Reboot(ctx context.Context, node string, r scenarios.RebootRequest) (scenarios.RebootOutcome, error) {
	n, err := ns.node(node)
	if err != nil {
		return scenarios.RebootOutcome{}, err
	}
	if err := ns.CheckReboot(r); err != nil {
		return scenarios.RebootOutcome{}, fmt.Errorf("reboot node %s: %w", node, err)
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return scenarios.RebootOutcome{}, fmt.Errorf("reboot node %s: %w", node, err)
	}
	mode := r.Mode
	if mode == "" {
		mode = RebootReset
	}
	extra := max(0, r.Downtime-ns.bootEstimate(n))
	ns.log.Info("rebooting vm node", "node", node, "mode", mode, "downtime", r.Downtime, "held", extra, "oldBootID", old.BootID)
	start := time.Now()
	switch mode {
	case RebootReset:
		if err = n.dom.Reset(); err == nil {
			err = hold(ctx, n.dom, extra)
		}
	case RebootGuest, RebootPanic:
		path := map[string]string{RebootGuest: "/reboot", RebootPanic: "/panic"}[mode]
		if err = ns.post(ctx, n, path); err == nil {
			err = hold(ctx, n.dom, extra)
		}
	case RebootPowerCycle:
		if err = n.dom.Destroy(); err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(extra):
			}
			if err == nil {
				err = n.dom.Start()
			}
		}
	}
	if err != nil {
		return scenarios.RebootOutcome{}, fmt.Errorf("reboot node %s (%s): %w", node, mode, err)
	}
	booting := time.Now()
	st, agentUp, err := ns.waitBoot(ctx, n, old.BootID)
	if err != nil {
		return scenarios.RebootOutcome{}, fmt.Errorf("reboot node %s (%s): %w", node, mode, err)
	}
	n.mu.Lock()
	n.boot = agentUp.Sub(booting)
	n.mu.Unlock()
	return scenarios.RebootOutcome{OldBootID: old.BootID, NewBootID: st.BootID, Downtime: time.Since(start)}, nil
}

// PauseNode implements scenarios.NodePauser: the domain is paused for d
// (a frozen machine: no heartbeat, no process runs) and resumed in the
// same boot; an error if the boot ID changed.
func (ns *NodeSet) PauseNode(ctx context.Context, node string, d time.Duration) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	ns.log.Info("pausing vm node", "node", node, "for", d, "bootID", old.BootID)
	if err := hold(ctx, n.dom, max(d, time.Millisecond)); err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	rv := ns.leaseVersion(ctx, n)
	st, _, err := ns.waitBoot(ctx, n, "")
	if err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	if st.BootID != old.BootID {
		return fmt.Errorf("pause node %s: boot ID changed from %s to %s (serial log %s)", node, old.BootID, st.BootID, n.serial)
	}
	if err := ns.waitRenewed(ctx, n, rv); err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	return nil
}

// NetworkBlip implements scenarios.NetworkBlipper: the node's NIC link is
// down for d (the guest sees no carrier; nothing reaches the API server)
// and up again, in the same boot.
func (ns *NodeSet) NetworkBlip(ctx context.Context, node string, d time.Duration) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	ls, ok := n.dom.(LinkSetter)
	if !ok {
		return fmt.Errorf("network blip on node %s: domain %s cannot set its link state", node, n.dom.Name())
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	ns.log.Info("cutting vm node off the network", "node", node, "for", d, "bootID", old.BootID)
	if err := ls.SetLink(false); err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if err := ls.SetLink(true); err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	rv := ns.leaseVersion(ctx, n)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	st, _, err := ns.waitBoot(ctx, n, "")
	if err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	if st.BootID != old.BootID {
		return fmt.Errorf("network blip on node %s: boot ID changed from %s to %s (serial log %s)", node, old.BootID, st.BootID, n.serial)
	}
	if err := ns.waitRenewed(ctx, n, rv); err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	return nil
}

// RestartKubelet implements scenarios.KubeletRestarter: the agent stops
// its kubelet, waits downtime and starts it again in the same boot.
func (ns *NodeSet) RestartKubelet(ctx context.Context, node string, downtime time.Duration) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("restart kubelet on node %s: %w", node, err)
	}
	if err := ns.postLong(ctx, n, "/restart-kubelet?downtime="+downtime.String(), downtime+time.Minute); err != nil {
		return fmt.Errorf("restart kubelet on node %s: %w", node, err)
	}
	st, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("restart kubelet on node %s: %w", node, err)
	}
	if st.BootID != old.BootID {
		return fmt.Errorf("restart kubelet on node %s: boot ID changed from %s to %s (serial log %s)", node, old.BootID, st.BootID, n.serial)
	}
	return nil
}

// Close implements scenarios.NodeSet: every domain is destroyed and
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

// AgentBootLogLine is what the agent writes to the console once it runs
// (its first log line of a boot).
const AgentBootLogLine = `bootproof-agent  "level"=0 "msg"="boot"`

// ProbeKVM boots one throw-away domain with KVM and reports whether the
// agent started within timeout; /dev/kvm missing is false without a boot.
// On hosts where KVM guests hang it returns false, and the caller uses TCG.
// The domain is removed before it returns.
func ProbeKVM(ctx context.Context, hv Hypervisor, img *Image, dir string, timeout time.Duration) (bool, error) {
	if _, err := os.Stat("/dev/kvm"); err != nil {
		return false, nil
	}
	const pem = "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"
	cfg := AgentConfig{NodeName: "kvm-probe", APIServer: "https://10.0.2.2:1", CAData: pem, CertData: pem, KeyData: pem}
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
		Initrd: initrd, SerialLog: serial, ControlPort: port, KVM: true})
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
