package controlplane

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigDefault(t *testing.T) {
	t.Setenv(EnvBinDir, "")
	c := Config{}.Default()
	if c.GracePeriod != DefaultGracePeriod || c.MonitorPeriod != DefaultMonitorPeriod {
		t.Errorf("periods = %s/%s, want %s/%s", c.GracePeriod, c.MonitorPeriod, DefaultGracePeriod, DefaultMonitorPeriod)
	}
	if c.ControllerManagerQPS != DefaultControllerManagerQPS || c.ControllerManagerBurst != DefaultControllerManagerBurst {
		t.Errorf("controller-manager client limits = %v/%d, want %d/%d", c.ControllerManagerQPS, c.ControllerManagerBurst, DefaultControllerManagerQPS, DefaultControllerManagerBurst)
	}
	if !slices.Equal(c.Controllers, DefaultControllers) {
		t.Errorf("controllers = %v, want %v", c.Controllers, DefaultControllers)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaulted zero Config does not validate: %v", err)
	}
	if !slices.Contains(DefaultControllers, "node-lifecycle-controller") {
		t.Errorf("default controllers lack the node lifecycle controller")
	}
}

func TestConfigValidate(t *testing.T) {
	t.Setenv(EnvBinDir, "")
	dir := t.TempDir()
	tests := []struct {
		name      string
		cfg       Config
		wantField string // empty: valid
		wantValue string
		wantText  string
	}{
		{name: "valid short periods", cfg: Config{GracePeriod: 6 * time.Second, MonitorPeriod: time.Second, BinDir: dir}},
		{name: "old controller alias", cfg: Config{Controllers: []string{"nodelifecycle", "-podgc", "*"}}},
		{name: "negative grace period", cfg: Config{GracePeriod: -time.Second}, wantField: "GracePeriod", wantValue: "-1s", wantText: "at least 1s"},
		{name: "grace shorter than monitor", cfg: Config{GracePeriod: 2 * time.Second, MonitorPeriod: 3 * time.Second}, wantField: "MonitorPeriod", wantValue: "3s", wantText: "shorter than the grace period 2s"},
		{name: "negative monitor period", cfg: Config{MonitorPeriod: -time.Second}, wantField: "MonitorPeriod", wantValue: "-1s", wantText: "positive duration"},
		{name: "unknown controller", cfg: Config{Controllers: []string{"node-lifecycle-controller", "bogus"}}, wantField: "Controllers[1]", wantValue: "bogus", wantText: "node-lifecycle-controller"},
		{name: "negative start timeout", cfg: Config{StartTimeout: -time.Second}, wantField: "StartTimeout", wantValue: "-1s", wantText: "positive duration"},
		{name: "negative stop timeout", cfg: Config{StopTimeout: -time.Second}, wantField: "StopTimeout", wantValue: "-1s", wantText: "positive duration"},
		{name: "extra args of another process", cfg: Config{ExtraArgs: map[string][]string{"kubelet": {"--v=2"}}}, wantField: "ExtraArgs[kubelet]", wantValue: "kubelet", wantText: "etcd, kube-apiserver, kube-controller-manager"},
		{name: "short cert validity", cfg: Config{CertValidity: time.Minute}, wantField: "CertValidity", wantValue: "1m0s", wantText: "from 1h0m0s to 8784h0m0s"},
		{name: "cert validity past a year", cfg: Config{CertValidity: 400 * 24 * time.Hour}, wantField: "CertValidity", wantValue: "9600h0m0s", wantText: "outlasts the run"},
		{name: "negative controller-manager QPS", cfg: Config{ControllerManagerQPS: -1}, wantField: "ControllerManagerQPS", wantValue: "-1", wantText: "positive number"},
		{name: "negative controller-manager burst", cfg: Config{ControllerManagerBurst: -5}, wantField: "ControllerManagerBurst", wantValue: "-5", wantText: "positive number"},
		{name: "missing bin dir", cfg: Config{BinDir: dir + "/nope"}, wantField: "BinDir", wantValue: dir + "/nope", wantText: "make controlplane"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Default().Validate()
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			if ce.Field.String() != tc.wantField || ce.Value != tc.wantValue {
				t.Errorf("ConfigError field %s value %q, want %s %q", ce.Field, ce.Value, tc.wantField, tc.wantValue)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "invalid "+tc.wantField+" ") {
				t.Errorf("error %q does not name field %s", msg, tc.wantField)
			}
			if !strings.Contains(msg, tc.wantText) {
				t.Errorf("error %q does not say %q", msg, tc.wantText)
			}
			if !strings.Contains(msg, "accepted:") {
				t.Errorf("error %q does not say what is accepted", msg)
			}
			// The library names Config fields; flags are the command line's.
			if strings.Contains(msg, "--") {
				t.Errorf("error %q names a command-line flag", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
		})
	}
}

func TestControllersFlagCanonicalizes(t *testing.T) {
	c := Config{Controllers: []string{"nodelifecycle", "-garbagecollector", "taint-eviction-controller"}}
	got := c.controllersFlag()
	want := "node-lifecycle-controller,-garbage-collector-controller,taint-eviction-controller"
	if got != want {
		t.Errorf("controllersFlag() = %q, want %q", got, want)
	}
}
