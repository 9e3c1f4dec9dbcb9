package fakes

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
)

func names(mods []LoadedModule) []string {
	var out []string
	for _, m := range mods {
		out = append(out, m.Name)
	}
	return out
}

func TestSimKernel(t *testing.T) {
	type op struct {
		load    bool
		module  string
		wantErr error
	}
	tests := []struct {
		name       string
		ops        []op
		wantLoaded []string
	}{
		{"load one", []op{{true, "dummy", nil}}, []string{"dummy"}},
		{"load twice is a no-op", []op{{true, "dummy", nil}, {true, "dummy", nil}}, []string{"dummy"}},
		{"dependencies first", []op{{true, "bonding", nil}}, []string{"tls", "bonding"}},
		{"unknown module", []op{{true, "nope", ErrUnknownModule}}, nil},
		{"unload not loaded is fine", []op{{false, "dummy", nil}}, nil},
		{"unload unknown module", []op{{false, "nope", ErrUnknownModule}}, nil},
		{"unload in use", []op{{true, "bonding", nil}, {false, "tls", ErrModuleInUse}}, []string{"tls", "bonding"}},
		{"unload then dependency", []op{{true, "bonding", nil}, {false, "bonding", nil}, {false, "tls", nil}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewSimKernel(SimKernelConfig{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.ops {
				var err error
				if o.load {
					err = k.Load(o.module)
				} else {
					err = k.Unload(o.module)
				}
				if !errors.Is(err, o.wantErr) {
					t.Fatalf("load=%v %s: err = %v, want %v", o.load, o.module, err, o.wantErr)
				}
				var me *ModuleError
				if err != nil && (!errors.As(err, &me) || me.Module != o.module || me.BootID != k.BootID()) {
					t.Errorf("error %v does not name module %s and boot %s", err, o.module, k.BootID())
				}
			}
			if got := names(k.Loaded()); !slices.Equal(got, tc.wantLoaded) {
				t.Errorf("loaded = %v, want %v", got, tc.wantLoaded)
			}
		})
	}
}

func TestSimKernelReboot(t *testing.T) {
	k, err := NewSimKernel(SimKernelConfig{Version: "6.1.0-a"})
	if err != nil {
		t.Fatal(err)
	}
	first := k.BootID()
	if len(first) != 36 {
		t.Fatalf("boot ID %q is not a UUID", first)
	}
	if err := k.Load("dummy"); err != nil {
		t.Fatal(err)
	}
	k.Halt()
	if k.BootID() != "" || len(k.Loaded()) != 0 {
		t.Errorf("halted kernel: boot %q, loaded %v", k.BootID(), k.Loaded())
	}
	if err := k.Load("dummy"); !errors.Is(err, ErrKernelDown) {
		t.Errorf("load on a halted kernel: err = %v", err)
	}
	second, err := k.Boot("")
	if err != nil {
		t.Fatal(err)
	}
	if second == first || k.Version() != "6.1.0-a" || len(k.Loaded()) != 0 {
		t.Errorf("after reboot: boot %s (was %s), version %s, loaded %v", second, first, k.Version(), k.Loaded())
	}
	if _, err := k.Boot("6.2.0-b"); err != nil || k.Version() != "6.2.0-b" || k.Boots() != 3 {
		t.Errorf("kernel upgrade: version %s boots %d err %v", k.Version(), k.Boots(), err)
	}
	if _, err := NewSimKernel(SimKernelConfig{Modules: map[string][]string{"a": {"missing"}}}); err == nil {
		t.Error("a module depending on a missing module was accepted")
	}
}

func TestModuleConfig(t *testing.T) {
	tests := []struct {
		name       string
		yaml       string
		wantErr    string
		wantLoad   []string
		wantUnload []string
	}{
		{name: "single", yaml: "kernelVersion: 6.1.0\ncontainerImage: x\nmodprobe:\n  moduleName: dummy\n", wantLoad: []string{"dummy"}, wantUnload: []string{"dummy"}},
		{name: "loading order", yaml: "modprobe:\n  moduleName: a\n  modulesLoadingOrder: [a, b, c]\n", wantLoad: []string{"c", "b", "a"}, wantUnload: []string{"a", "b", "c"}},
		{name: "unknown upstream fields ignored", yaml: "insecurePull: true\nmodprobe:\n  moduleName: a\n  dirName: /opt\n", wantLoad: []string{"a"}, wantUnload: []string{"a"}},
		{name: "no module name", yaml: "modprobe: {}\n", wantErr: "moduleName is empty"},
		{name: "order not starting with module", yaml: "modprobe:\n  moduleName: a\n  modulesLoadingOrder: [b, a]\n", wantErr: "must start with moduleName"},
		{name: "not yaml", yaml: "modprobe: [", wantErr: contract.WorkerConfigAnnotation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseModuleConfig(tc.yaml)
			if tc.wantErr != "" {
				if err == nil || !contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Steps(contract.ActionLoad); !slices.Equal(got, tc.wantLoad) {
				t.Errorf("load steps = %v, want %v", got, tc.wantLoad)
			}
			if got := c.Steps(contract.ActionUnload); !slices.Equal(got, tc.wantUnload) {
				t.Errorf("unload steps = %v, want %v", got, tc.wantUnload)
			}
		})
	}
}

func TestTerminationMessageRoundTrip(t *testing.T) {
	m := contract.WorkerTerminationMessage{BootID: "b-1", Action: contract.ActionLoad, Modules: []string{"b", "a"}, KernelVersion: "6.1"}
	s := m.String()
	if want := `{"bootID":"b-1","action":"Load","modules":["b","a"],"kernelVersion":"6.1"}`; s != want {
		t.Errorf("encoded = %s, want %s", s, want)
	}
	got, err := contract.ParseWorkerTerminationMessage(s + "\n")
	if err != nil || got.BootID != "b-1" || !slices.Equal(got.Modules, m.Modules) {
		t.Errorf("parsed = %+v, %v", got, err)
	}
}

func TestTimingProfiles(t *testing.T) {
	def, err := TimingProfile(nodeapi.TimingKubeletDefaults)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := TimingProfile(nodeapi.TimingFast)
	if err != nil {
		t.Fatal(err)
	}
	for name, tm := range map[string]Timing{"defaults": def, "fast": fast, "scaled": def.Scaled(10)} {
		if err := tm.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if def.LeaseDuration != 40e9 || def.RenewInterval != 10e9 || def.StatusInterval != 10e9 || def.ReportInterval != 300e9 {
		t.Errorf("kubelet-defaults differ from the kubelet's: %+v", def)
	}
	if r := float64(def.RenewInterval) / float64(fast.RenewInterval); r < 4 || r > 6 {
		t.Errorf("fast is %.1fx quicker than kubelet-defaults, want about 5x", r)
	}
	if _, err := TimingProfile("slow"); err == nil || !contains(err.Error(), "kubelet-defaults") {
		t.Errorf("unknown profile: err = %v", err)
	}
	bad := def
	bad.RenewInterval = def.LeaseDuration
	if err := bad.Validate(); err == nil {
		t.Error("renew interval equal to the lease duration was accepted")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
