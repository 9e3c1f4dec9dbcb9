package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// AgentConfigPath is where the per-node initramfs puts the agent's
// configuration inside the guest.
const AgentConfigPath = "/etc/bootproof/agent.json"

// Defaults of the guest agent for QEMU user-mode networking: the guest is
// 10.0.2.15/24 behind QEMU's gateway 10.0.2.2 (restricted: it forwards
// only the API server, see GuestAPIServer).
const (
	DefaultInterface = "eth0"
	DefaultAddress   = "10.0.2.15/24"
	DefaultGateway   = "10.0.2.2"
	// DefaultAgentControlPort is the guest TCP port of the agent's control
	// API (reboot, panic); the provider forwards a host port to it.
	DefaultAgentControlPort = 7070
)

// DefaultModules are loaded at boot, before the network comes up.
var DefaultModules = []string{"virtio_pci", "virtio_net"}

// AgentConfig is the guest agent's configuration, a JSON file in the
// per-node initramfs. Credentials are PEM text.
type AgentConfig struct {
	// NodeName is the Node the agent registers; required.
	NodeName string `json:"nodeName"`
	// APIServer is the API server URL as the guest reaches it, e.g.
	// https://10.0.2.100:6443 (GuestAPIServer); required.
	APIServer string `json:"apiServer"`
	// CAData, CertData and KeyData authenticate both ends: the API
	// server's CA and the node's client certificate (system:node:<name>).
	CAData   string `json:"caData"`
	CertData string `json:"certData"`
	KeyData  string `json:"keyData"`
	// TLSServerName, when set, is the name (or IP) the API server's
	// certificate is checked against instead of the apiServer host, e.g.
	// 127.0.0.1 when the host reaches the API server there.
	TLSServerName string `json:"tlsServerName,omitempty"`
	// Timing names a fakes timing profile; empty means kubelet-defaults.
	Timing nodeapi.TimingProfile `json:"timing,omitempty"`
	// TimingScale divides the profile's intervals; 0 means 1.
	TimingScale float64 `json:"timingScale,omitempty"`
	// Modules are loaded at boot, before the network; nil means
	// DefaultModules.
	Modules []string `json:"modules,omitempty"`
	// Network configures the guest NIC.
	Network Network `json:"network"`
	// ControlPort is the guest TCP port of the agent's control API; 0
	// means DefaultAgentControlPort.
	ControlPort int `json:"controlPort,omitempty"`
	// ControlSecret is the node's secret (agentapi.NewSecret) that every
	// control request must carry; required. Only this file (mode 0600 in
	// the guest, in an initramfs the host writes 0600) holds it.
	ControlSecret string `json:"controlSecret"`
	// Labels are added to the Node.
	Labels map[string]string `json:"labels,omitempty"`
}

// Network is the guest's static network configuration.
type Network struct {
	Interface string `json:"interface,omitempty"`
	Address   string `json:"address,omitempty"` // CIDR
	Gateway   string `json:"gateway,omitempty"`
}

// DecodeAgentConfig reads an AgentConfig, rejecting unknown fields, and
// applies the defaults. It validates what the agent would otherwise only
// find out in the guest.
func DecodeAgentConfig(r io.Reader) (AgentConfig, error) {
	var c AgentConfig
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return AgentConfig{}, fmt.Errorf("agent config: %w", err)
	}
	if dec.More() {
		return AgentConfig{}, errors.New("agent config: trailing data after the JSON object")
	}
	if err := c.Default(); err != nil {
		return AgentConfig{}, err
	}
	return c, nil
}

// Encode writes the configuration as indented JSON.
func (c AgentConfig) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("agent config for node %s: %w", c.NodeName, err)
	}
	return b.Bytes(), nil
}

// Default fills in defaults and validates.
func (c *AgentConfig) Default() error {
	if c.NodeName == "" {
		return errors.New("agent config: nodeName is empty")
	}
	wrap := func(format string, a ...any) error {
		return fmt.Errorf("agent config for node %s: "+format, append([]any{c.NodeName}, a...)...)
	}
	u, err := url.Parse(c.APIServer)
	if err != nil {
		return wrap("apiServer: %w", err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return wrap("apiServer %q: want https://host:port", c.APIServer)
	}
	for name, v := range map[string]string{"caData": c.CAData, "certData": c.CertData, "keyData": c.KeyData} {
		if !bytes.Contains([]byte(v), []byte("-----BEGIN ")) {
			return wrap("%s: not PEM", name)
		}
	}
	if c.Timing == "" {
		c.Timing = nodeapi.TimingKubeletDefaults
	}
	if _, err := fakes.TimingProfile(c.Timing); err != nil {
		return wrap("%w", err)
	}
	if c.TimingScale == 0 {
		c.TimingScale = 1
	}
	if c.TimingScale < 0 {
		return wrap("timingScale %v is negative", c.TimingScale)
	}
	if c.Modules == nil {
		c.Modules = append([]string(nil), DefaultModules...)
	}
	if c.Network.Interface == "" {
		c.Network.Interface = DefaultInterface
	}
	if c.Network.Address == "" {
		c.Network.Address = DefaultAddress
	}
	if c.Network.Gateway == "" {
		c.Network.Gateway = DefaultGateway
	}
	pfx, err := netip.ParsePrefix(c.Network.Address)
	if err != nil {
		return wrap("network address: %w", err)
	}
	gw, err := netip.ParseAddr(c.Network.Gateway)
	if err != nil {
		return wrap("network gateway: %w", err)
	}
	if !pfx.Masked().Contains(gw) {
		return wrap("network gateway %s is outside %s", gw, pfx)
	}
	if c.ControlPort == 0 {
		c.ControlPort = DefaultAgentControlPort
	}
	if c.ControlPort < 0 || c.ControlPort > 65535 {
		return wrap("controlPort %d out of range", c.ControlPort)
	}
	if err := agentapi.CheckSecret(c.ControlSecret); err != nil {
		return wrap("controlSecret: %w", err)
	}
	return nil
}

// TimingValue is the configured fakes.Timing.
func (c AgentConfig) TimingValue() fakes.Timing {
	t, _ := fakes.TimingProfile(c.Timing)
	if c.TimingScale > 0 && c.TimingScale != 1 {
		t = t.Scaled(c.TimingScale)
	}
	return t
}
