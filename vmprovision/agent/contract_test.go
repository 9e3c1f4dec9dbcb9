//go:build linux

package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cavaliergopher/cpio"
	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
)

// contractGuest is a guest without a VM: the agent's real ControlHandler
// over a simulated kernel, served on the port the domain forwards, so the
// host side (vmprovision.NodeSet) and the guest side (this package) talk
// over HTTP exactly as they do through QEMU.
type contractGuest struct {
	k       *fakes.SimKernel
	cfg     guest.AgentConfig // as the guest reads it from its initramfs
	mu      sync.Mutex
	actions []string
}

func (g *contractGuest) record(a string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.actions = append(g.actions, a)
}

func (g *contractGuest) took() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.actions)
}

// Reboot starts a new boot at once (the kernel forgets its modules).
func (g *contractGuest) Reboot() error {
	g.record("reboot")
	_, err := g.k.Boot("")
	return err
}

func (g *contractGuest) Panic() error {
	g.record("panic")
	_, err := g.k.Boot("")
	return err
}

func (g *contractGuest) RestartKubelet(_ context.Context, d time.Duration) error {
	g.record("restart-kubelet " + d.String())
	return nil
}

func (g *contractGuest) RejectWorkerPods(n int) { g.record(fmt.Sprintf("reject-pods %d", n)) }

// contractHypervisor defines domains whose "guest" is a contractGuest.
type contractHypervisor struct {
	t         *testing.T
	imageSize int64 // the main image, before the node's archive
	guests    map[string]*contractGuest
}

type contractDomain struct{ name string }

func (d contractDomain) Name() string    { return d.name }
func (d contractDomain) Start() error    { return nil }
func (d contractDomain) Destroy() error  { return nil }
func (d contractDomain) Reset() error    { return nil }
func (d contractDomain) Suspend() error  { return nil }
func (d contractDomain) Resume() error   { return nil }
func (d contractDomain) Undefine() error { return nil }

func (h *contractHypervisor) Define(xml string) (vmprovision.Domain, error) {
	m := regexp.MustCompile(`<name>([^<]+)</name>[\s\S]*<initrd>([^<]+)</initrd>[\s\S]*hostfwd=tcp:127\.0\.0\.1:(\d+)-`).FindStringSubmatch(xml)
	if m == nil {
		return nil, fmt.Errorf("no name, initrd or hostfwd in %s", xml)
	}
	cfg, err := guestConfig(m[2], h.imageSize)
	if err != nil {
		return nil, err
	}
	k, err := fakes.NewSimKernel(fakes.SimKernelConfig{})
	if err != nil {
		return nil, err
	}
	if err := k.Load("dummy"); err != nil {
		return nil, err
	}
	g := &contractGuest{k: k, cfg: cfg}
	l, err := net.Listen("tcp", "127.0.0.1:"+m[3])
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: ControlHandler(cfg.ControlSecret, k, g, g, logr.Discard()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	h.t.Cleanup(func() { srv.Close() })
	h.guests[m[1]] = g
	return contractDomain{name: m[1]}, nil
}

func (h *contractHypervisor) Close() error { return nil }

// guestConfig reads the agent's configuration from the node's archive of
// its initramfs, which follows the main image at a 4-byte boundary.
func guestConfig(initrd string, imageSize int64) (guest.AgentConfig, error) {
	f, err := os.Open(initrd)
	if err != nil {
		return guest.AgentConfig{}, err
	}
	defer f.Close()
	if _, err := f.Seek(imageSize+(4-imageSize%4)%4, io.SeekStart); err != nil {
		return guest.AgentConfig{}, err
	}
	var raw []byte
	var mode cpio.FileMode
	r := cpio.NewReader(f)
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return guest.AgentConfig{}, err
		}
		if "/"+h.Name == guest.AgentConfigPath {
			if raw, err = io.ReadAll(r); err != nil {
				return guest.AgentConfig{}, err
			}
			mode = h.Mode
		}
	}
	if raw == nil || mode.Perm() != 0o600 {
		return guest.AgentConfig{}, fmt.Errorf("initramfs %s: %s missing or not mode 0600 (mode %o)", initrd, guest.AgentConfigPath, mode.Perm())
	}
	return guest.DecodeAgentConfig(bytes.NewReader(raw))
}

// TestHostGuestContract drives the real guest control API with the real
// host client: the guest encodes its state and the host decodes it; the
// host encodes requests (paths, the downtime query) and the guest decodes
// them. A field or path that one side renamed alone fails here.
func TestHostGuestContract(t *testing.T) {
	kt, err := vmprovision.FindKernelTree("../testdata/image/kernel", "")
	if err != nil {
		t.Fatal(err)
	}
	img, err := vmprovision.BuildImage(vmprovision.ImageSpec{Kernel: kt, Agent: "../testdata/image/agent/bootproof-agent", Modules: []string{"dummy"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	st, err := os.Stat(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	hv := &contractHypervisor{t: t, imageSize: st.Size(), guests: map[string]*contractGuest{}}
	b := &vmprovision.Backend{
		Hypervisor: hv, Image: img, APIServer: "https://127.0.0.1:6443", Forwarder: "/usr/bin/socat", RunID: "contract", Dir: t.TempDir(),
		BootTimeout: 10 * time.Second, BootEstimate: 20 * time.Millisecond,
		Credentials: func(string) (*rest.Config, error) {
			return &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte(pem), CertData: []byte(pem), KeyData: []byte(pem)}}, nil
		},
	}
	ctx := context.Background()
	set, err := b.Provision(ctx, nodeapi.ProvisionRequest{Names: []string{"vm-0"}, Timing: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	ns := set.(*vmprovision.NodeSet)
	defer ns.Close()
	g := hv.guests[vmprovision.DomainName("contract", "vm-0")]
	if g == nil {
		t.Fatalf("no guest defined: %v", hv.guests)
	}

	// wantState is the guest kernel's truth; the host must read exactly it.
	wantState := func(t *testing.T) {
		t.Helper()
		st, err := ns.State(ctx, "vm-0")
		if err != nil {
			t.Fatal(err)
		}
		var mods []string
		for _, m := range g.k.Loaded() {
			mods = append(mods, m.Name)
		}
		if st.BootID == "" || st.BootID != g.k.BootID() || st.KernelVersion != g.k.Version() || !slices.Equal(st.Modules, mods) {
			t.Errorf("host reads %+v, guest has boot %s, kernel %s, modules %v", st, g.k.BootID(), g.k.Version(), mods)
		}
	}
	wantState(t)
	refused(t, ctx, ns, g)

	if err := ns.LoadModule(ctx, "vm-0", "bonding"); err != nil {
		t.Fatal(err)
	}
	wantState(t)
	if err := ns.LoadModule(ctx, "vm-0", "nosuchmod"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("load of an unknown module: %v, want the guest's 404", err)
	}

	if err := ns.RestartKubelet(ctx, "vm-0", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := ns.RejectPods(ctx, "vm-0", 2); err != nil {
		t.Fatal(err)
	}
	if got, want := g.took(), []string{"restart-kubelet 1.5s", "reject-pods 2"}; !slices.Equal(got, want) {
		t.Errorf("guest took %v, want %v", got, want)
	}

	for _, mode := range []nodeapi.RebootMode{vmprovision.RebootGuest, vmprovision.RebootPanic} {
		before := g.k.Boots()
		out, err := ns.Reboot(ctx, "vm-0", nodeapi.RebootRequest{Mode: mode})
		if err != nil {
			t.Fatalf("reboot %s: %v", mode, err)
		}
		if g.k.Boots() != before+1 || out.NewBootID != g.k.BootID() || out.OldBootID == out.NewBootID {
			t.Errorf("reboot %s: outcome %+v, guest boot %s after %d boots", mode, out, g.k.BootID(), g.k.Boots())
		}
		wantState(t)
	}
	if got, want := g.took(), []string{"restart-kubelet 1.5s", "reject-pods 2", "reboot", "panic"}; !slices.Equal(got, want) {
		t.Errorf("guest took %v, want %v", got, want)
	}
}

// refused shows that the guest does nothing for a request without the
// node's secret, or with another one, and answers 401; the host's own
// requests (with the secret) are accepted.
func refused(t *testing.T, ctx context.Context, ns *vmprovision.NodeSet, g *contractGuest) {
	t.Helper()
	addr, err := ns.ControlAddress("vm-0")
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.ControlSecret == "" {
		t.Fatal("the guest has no secret")
	}
	other, _ := agentapi.NewSecret()
	boot, mods := g.k.BootID(), g.k.Loaded()
	for _, auth := range []string{"", "Bearer " + other, "Bearer " + g.cfg.ControlSecret[:len(g.cfg.ControlSecret)-1], "Basic " + g.cfg.ControlSecret} {
		for _, rq := range []struct{ method, path string }{
			{http.MethodGet, agentapi.PathState},
			{http.MethodPost, agentapi.PathReboot},
			{http.MethodPost, agentapi.PathPanic},
			{http.MethodPost, agentapi.RestartKubeletPath(time.Second)},
			{http.MethodPost, agentapi.RejectPodsPath(1)},
			{http.MethodPut, agentapi.ModulePath("bonding")},
			{http.MethodDelete, agentapi.ModulePath("dummy")},
			{http.MethodPost, agentapi.DialPath(addr, time.Second)},
		} {
			req, err := http.NewRequestWithContext(ctx, rq.method, "http://"+addr+rq.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if auth != "" {
				req.Header.Set(agentapi.HeaderAuthorization, auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s with Authorization %q: %s, want 401", rq.method, rq.path, auth, resp.Status)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // an accepted reboot would have run
	if g.k.BootID() != boot || !slices.Equal(g.k.Loaded(), mods) || len(g.took()) != 0 {
		t.Errorf("refused requests changed the guest: boot %s -> %s, modules %v -> %v, actions %v", boot, g.k.BootID(), mods, g.k.Loaded(), g.took())
	}
	// The host's client carries the secret.
	d, err := ns.Dial(ctx, "vm-0", addr, time.Second)
	if err != nil || !d.Connected {
		t.Errorf("dial through the host client: %+v, %v", d, err)
	}
}
