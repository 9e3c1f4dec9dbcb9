package guest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/nodeapi"
)

const testPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// testSecret is a well-formed agent secret (agentapi.CheckSecret).
var testSecret = strings.Repeat("0123456789abcdef", 4)

func agentJSON(t *testing.T, mutate func(m map[string]any)) string {
	t.Helper()
	m := map[string]any{
		"nodeName": "vm-0", "apiServer": "https://10.0.2.2:6443",
		"caData": testPEM, "certData": testPEM, "keyData": strings.ReplaceAll(testPEM, "CERTIFICATE", "EC PRIVATE KEY"),
		"controlSecret": testSecret,
	}
	if mutate != nil {
		mutate(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeAgentConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      func(t *testing.T) string
		check   func(t *testing.T, c AgentConfig)
		wantErr string
	}{
		{name: "defaults", in: func(t *testing.T) string { return agentJSON(t, nil) }, check: func(t *testing.T, c AgentConfig) {
			want := Network{Interface: "eth0", Address: "10.0.2.15/24", Gateway: "10.0.2.2"}
			if c.Network != want {
				t.Errorf("network %+v, want %+v", c.Network, want)
			}
			if !reflect.DeepEqual(c.Modules, []string{"virtio_pci", "virtio_net"}) {
				t.Errorf("modules %v", c.Modules)
			}
			if c.Timing != nodeapi.TimingKubeletDefaults || c.TimingScale != 1 || c.ControlPort != 7070 {
				t.Errorf("timing %q scale %v port %d", c.Timing, c.TimingScale, c.ControlPort)
			}
			if c.TimingValue() != fakes.TimingProfiles[nodeapi.TimingKubeletDefaults] {
				t.Errorf("TimingValue %+v", c.TimingValue())
			}
		}},
		{name: "everything set", in: func(t *testing.T) string {
			return agentJSON(t, func(m map[string]any) {
				m["timing"], m["timingScale"], m["modules"] = "fast", 2, []string{"virtio_pci"}
				m["network"] = map[string]string{"interface": "ens3", "address": "192.168.7.9/16", "gateway": "192.168.0.1"}
				m["controlPort"], m["labels"] = 9000, map[string]string{"a": "b"}
			})
		}, check: func(t *testing.T, c AgentConfig) {
			if c.Network.Interface != "ens3" || c.ControlPort != 9000 || c.Labels["a"] != "b" {
				t.Errorf("got %+v", c)
			}
			if got, want := c.TimingValue().RenewInterval, fakes.TimingProfiles[nodeapi.TimingFast].RenewInterval/2; got != want {
				t.Errorf("scaled renew interval %s, want %s", got, want)
			}
		}},
		{name: "empty modules kept empty", in: func(t *testing.T) string {
			return agentJSON(t, func(m map[string]any) { m["modules"] = []string{} })
		}, check: func(t *testing.T, c AgentConfig) {
			if len(c.Modules) != 0 {
				t.Errorf("modules %v, want none", c.Modules)
			}
		}},
		{name: "no node name", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { delete(m, "nodeName") }) },
			wantErr: "nodeName is empty"},
		{name: "http api server", in: func(t *testing.T) string {
			return agentJSON(t, func(m map[string]any) { m["apiServer"] = "http://10.0.2.2:8080" })
		}, wantErr: "node vm-0: apiServer"},
		{name: "key not PEM", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { m["keyData"] = "xyz" }) },
			wantErr: "keyData: not PEM"},
		{name: "unknown timing", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { m["timing"] = "warp" }) },
			wantErr: "unknown timing profile"},
		{name: "gateway outside subnet", in: func(t *testing.T) string {
			return agentJSON(t, func(m map[string]any) { m["network"] = map[string]string{"gateway": "10.0.3.2"} })
		}, wantErr: "gateway 10.0.3.2 is outside 10.0.2.15/24"},
		{name: "bad address", in: func(t *testing.T) string {
			return agentJSON(t, func(m map[string]any) { m["network"] = map[string]string{"address": "10.0.2.15"} })
		}, wantErr: "network address"},
		{name: "unknown field", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { m["nodeNmae"] = "x" }) },
			wantErr: "unknown field"},
		{name: "trailing data", in: func(t *testing.T) string { return agentJSON(t, nil) + "{}" }, wantErr: "trailing data"},
		{name: "no secret", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { delete(m, "controlSecret") }) },
			wantErr: "controlSecret: secret has 0 characters"},
		{name: "short secret", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { m["controlSecret"] = "abcd" }) },
			wantErr: "controlSecret: secret has 4 characters"},
		{name: "bad port", in: func(t *testing.T) string { return agentJSON(t, func(m map[string]any) { m["controlPort"] = 70000 }) },
			wantErr: "controlPort 70000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeAgentConfig(strings.NewReader(tt.in(t)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestAgentConfigRoundTrip(t *testing.T) {
	c, err := DecodeAgentConfig(strings.NewReader(agentJSON(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := DecodeAgentConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Errorf("round trip changed the config:\n%+v\n%+v", c, c2)
	}
}
