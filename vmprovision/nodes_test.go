package vmprovision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// fakeHypervisor runs, for each defined domain, a fake agent on the
// domain's forwarded control port; the domain's operations change the
// agent's boot as a VM would.
type fakeHypervisor struct {
	t        *testing.T
	kvmHangs bool
	mu       sync.Mutex
	domains  map[string]*fakeDomain
	ops      []string
}

func (h *fakeHypervisor) Define(xml string) (Domain, error) {
	m := regexp.MustCompile(`<name>([^<]+)</name>[\s\S]*hostfwd=tcp:127\.0\.0\.1:(\d+)-`).FindStringSubmatch(xml)
	if m == nil {
		return nil, fmt.Errorf("no name or hostfwd in %s", xml)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+m[2])
	if err != nil {
		return nil, err
	}
	d := &fakeDomain{h: h, name: m[1], kvm: strings.Contains(xml, `type="kvm"`)}
	if sm := regexp.MustCompile(`<source path="([^"]+)"`).FindStringSubmatch(xml); sm != nil {
		d.serial = sm[1]
	}
	srv := &http.Server{Handler: d}
	go func() { _ = srv.Serve(l) }()
	h.t.Cleanup(func() { srv.Close() })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.domains[d.name] = d
	return d, nil
}

func (h *fakeHypervisor) Close() error { return nil }

func (h *fakeHypervisor) op(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, s)
}

type fakeDomain struct {
	h         *fakeHypervisor
	name      string
	serial    string
	kvm       bool
	mu        sync.Mutex
	bootID    string // empty while off
	paused    bool
	modules   []string
	undefined bool
}

func (d *fakeDomain) boot() {
	if d.kvm && d.h.kvmHangs {
		return
	}
	d.bootID, d.modules = uuid.NewString(), []string{"virtio_net"}
	if d.serial != "" {
		f, err := os.OpenFile(d.serial, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "2026-01-01T00:00:00Z %s \"bootID\"=%q\n", AgentBootLogLine, d.bootID)
			f.Close()
		}
	}
}

func (d *fakeDomain) do(op string, f func()) error {
	d.h.op(op)
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
	return nil
}

func (d *fakeDomain) Name() string    { return d.name }
func (d *fakeDomain) Start() error    { return d.do("start", d.boot) }
func (d *fakeDomain) Reset() error    { return d.do("reset", d.boot) }
func (d *fakeDomain) Destroy() error  { return d.do("destroy", func() { d.bootID = "" }) }
func (d *fakeDomain) Suspend() error  { return d.do("suspend", func() { d.paused = true }) }
func (d *fakeDomain) Resume() error   { return d.do("resume", func() { d.paused = false }) }
func (d *fakeDomain) Undefine() error { return d.do("undefine", func() { d.undefined = true }) }

func (d *fakeDomain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bootID == "" || d.paused {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /state":
		_ = json.NewEncoder(w).Encode(agentapi.State{BootID: d.bootID, KernelVersion: testKernelVersion, Modules: d.modules})
	case "POST /reboot", "POST /panic":
		d.h.op(strings.TrimPrefix(r.URL.Path, "/"))
		d.boot()
		w.WriteHeader(http.StatusAccepted)
	case "POST /restart-kubelet":
		d.h.op("restart-kubelet " + r.URL.Query().Get("downtime"))
	case "PUT /modules/bonding":
		d.modules = append(d.modules, "tls", "bonding")
	default:
		http.NotFound(w, r)
	}
}

func TestNodeSetRebootModes(t *testing.T) {
	img, err := BuildImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Modules: []string{"dummy"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hv := &fakeHypervisor{t: t, domains: map[string]*fakeDomain{}}
	cfg := testAgentConfig(t)
	b := &Backend{
		Hypervisor: hv, Image: img, APIServer: "https://127.0.0.1:6443", Forwarder: "/usr/bin/socat", RunID: "r1", Dir: t.TempDir(), BootTimeout: 10 * time.Second,
		BootEstimate: 20 * time.Millisecond,
		Credentials: func(node string) (*rest.Config, error) {
			return &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte(cfg.CAData), CertData: []byte(cfg.CertData), KeyData: []byte(cfg.KeyData)}}, nil
		},
	}
	ctx := context.Background()
	set, err := b.Provision(ctx, nodeapi.ProvisionRequest{Names: []string{"vm-0", "vm-1"}, Timing: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	ns := set.(*NodeSet)
	if got := ns.RebootModes(); !slices.Equal(got, RebootModeNames) {
		t.Errorf("RebootModes = %v", got)
	}
	tests := []struct {
		mode     nodeapi.RebootMode
		downtime time.Duration
		wantOps  []string
		rebooted bool
	}{
		{mode: RebootReset, wantOps: []string{"reset"}, rebooted: true},
		{mode: "", wantOps: []string{"reset"}, rebooted: true},
		{mode: RebootReset, downtime: 50 * time.Millisecond, wantOps: []string{"reset", "suspend", "resume"}, rebooted: true},
		{mode: RebootGuest, wantOps: []string{"reboot"}, rebooted: true},
		{mode: RebootPanic, wantOps: []string{"panic"}, rebooted: true},
		{mode: RebootPowerCycle, downtime: 50 * time.Millisecond, wantOps: []string{"destroy", "start"}, rebooted: true},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+tt.downtime.String(), func(t *testing.T) {
			if err := ns.LoadModule(ctx, "vm-1", "bonding"); err != nil {
				t.Fatal(err)
			}
			hv.mu.Lock()
			hv.ops = nil
			hv.mu.Unlock()
			out, err := ns.Reboot(ctx, "vm-1", nodeapi.RebootRequest{Mode: tt.mode, Downtime: tt.downtime})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hv.ops, tt.wantOps) {
				t.Errorf("operations %v, want %v", hv.ops, tt.wantOps)
			}
			// The downtime is the whole time down: what the fake's
			// instant boot does not take is held.
			if out.Downtime <= 0 || out.Downtime < tt.downtime-20*time.Millisecond {
				t.Errorf("measured downtime %s for a requested %s", out.Downtime, tt.downtime)
			}
			if (out.NewBootID != out.OldBootID) != tt.rebooted || out.OldBootID == "" {
				t.Errorf("boot %q -> %q, want rebooted=%v", out.OldBootID, out.NewBootID, tt.rebooted)
			}
			st, err := ns.State(ctx, "vm-1")
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(st.Modules, "bonding") == tt.rebooted {
				t.Errorf("modules after: %v", st.Modules)
			}
		})
	}
	t.Run("pause", func(t *testing.T) {
		if err := ns.LoadModule(ctx, "vm-1", "bonding"); err != nil {
			t.Fatal(err)
		}
		before, err := ns.State(ctx, "vm-1")
		if err != nil {
			t.Fatal(err)
		}
		hv.mu.Lock()
		hv.ops = nil
		hv.mu.Unlock()
		if err := ns.PauseNode(ctx, "vm-1", 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if want := []string{"suspend", "resume"}; !slices.Equal(hv.ops, want) {
			t.Errorf("operations %v, want %v", hv.ops, want)
		}
		after, err := ns.State(ctx, "vm-1")
		if err != nil {
			t.Fatal(err)
		}
		if after.BootID != before.BootID || !slices.Contains(after.Modules, "bonding") {
			t.Errorf("after a pause: boot %s -> %s, modules %v", before.BootID, after.BootID, after.Modules)
		}
	})
	t.Run("restart-kubelet", func(t *testing.T) {
		hv.mu.Lock()
		hv.ops = nil
		hv.mu.Unlock()
		if err := ns.RestartKubelet(ctx, "vm-1", 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if want := []string{"restart-kubelet 1.5s"}; !slices.Equal(hv.ops, want) {
			t.Errorf("operations %v, want %v", hv.ops, want)
		}
	})
	for _, tt := range []struct {
		req  nodeapi.RebootRequest
		want string
	}{
		{nodeapi.RebootRequest{Mode: "kexec"}, "cannot reboot in mode kexec (implemented: reset, guest, panic, power-cycle)"},
		{nodeapi.RebootRequest{KernelVersion: "6.12.0"}, "booting another kernel version (6.12.0) is not supported"},
		{nodeapi.RebootRequest{NotReadyFor: 2 * time.Second}, "Ready=False blip at kubelet startup (2s) is not supported"},
	} {
		if err := ns.CheckReboot(tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckReboot(%+v) = %v, want %q", tt.req, err, tt.want)
		}
		if _, err := ns.Reboot(ctx, "vm-1", tt.req); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "vm-1") {
			t.Errorf("Reboot(%+v) = %v, want %q", tt.req, err, tt.want)
		}
	}
	// A mode listed in RebootModeNames that Reboot's switch does not do
	// (a new mode listed before it is implemented) is refused: nothing
	// happens to the domain, and the error says so.
	t.Run("listed but not implemented", func(t *testing.T) {
		const hibernate nodeapi.RebootMode = "hibernate"
		saved := RebootModeNames
		RebootModeNames = append(slices.Clone(saved), hibernate)
		defer func() { RebootModeNames = saved }()
		hv.mu.Lock()
		hv.ops = nil
		hv.mu.Unlock()
		_, err := ns.Reboot(ctx, "vm-1", nodeapi.RebootRequest{Mode: hibernate})
		var um *nodeapi.UnsupportedModeError
		if !errors.As(err, &um) || um.Mode != hibernate || slices.Contains(um.Supported, hibernate) {
			t.Errorf("Reboot(hibernate) = %v, want an UnsupportedModeError", err)
		}
		if len(hv.ops) > 0 {
			t.Errorf("operations %v for a mode Reboot does not do", hv.ops)
		}
	})
	if err := ns.CheckReboot(nodeapi.RebootRequest{Mode: RebootPanic, Downtime: time.Second}); err != nil {
		t.Errorf("CheckReboot(panic) = %v", err)
	}
	if _, err := ns.Reboot(ctx, "vm-9", nodeapi.RebootRequest{}); err == nil || !strings.Contains(err.Error(), "vm-9") {
		t.Errorf("unknown node: err = %v", err)
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	for name, d := range hv.domains {
		if !d.undefined {
			t.Errorf("%s still defined after Close", name)
		}
		if !strings.HasPrefix(name, "bootproof-r1-vm-") {
			t.Errorf("domain name %s", name)
		}
	}
}

func TestProbeKVM(t *testing.T) {
	if _, err := os.Stat("/dev/kvm"); err != nil {
		t.Skipf("no /dev/kvm here (%v): ProbeKVM returns false without booting", err)
	}
	img, err := BuildImage(ImageSpec{Kernel: testTree(t), Agent: "testdata/image/agent/bootproof-agent", Modules: []string{"dummy"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		hangs bool
		want  bool
	}{{"kvm boots", false, true}, {"kvm hangs", true, false}} {
		t.Run(tt.name, func(t *testing.T) {
			hv := &fakeHypervisor{t: t, domains: map[string]*fakeDomain{}, kvmHangs: tt.hangs}
			got, err := ProbeKVM(context.Background(), hv, img, t.TempDir(), "test", 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ProbeKVM = %v, want %v", got, tt.want)
			}
			for name, d := range hv.domains {
				if !d.undefined {
					t.Errorf("probe domain %s left defined", name)
				}
			}
		})
	}
}
