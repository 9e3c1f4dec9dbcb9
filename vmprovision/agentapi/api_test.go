package agentapi

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// wireState pins State's JSON: the guest agent inside a built image and
// the host that reads it must agree on these field names.
const wireState = `{"bootID":"0f5b7a56-4b0e-4c57-9a3e-2f0c1d1e9b11","kernelVersion":"6.1.0-test-amd64","modules":["virtio_net","tls","bonding"]}`

func TestStateWire(t *testing.T) {
	st := State{BootID: "0f5b7a56-4b0e-4c57-9a3e-2f0c1d1e9b11", KernelVersion: "6.1.0-test-amd64", Modules: []string{"virtio_net", "tls", "bonding"}}

	// The guest encodes as the agent's GET /state handler does.
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(st); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.String()); got != wireState {
		t.Errorf("guest encodes\n%s\nwant\n%s", got, wireState)
	}

	// The host decodes; strictly here, so a renamed field fails instead
	// of leaving a zero value.
	for _, in := range []string{wireState, b.String()} {
		dec := json.NewDecoder(strings.NewReader(in))
		dec.DisallowUnknownFields()
		var got State
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("host decodes %s: %v", in, err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Errorf("host decodes %s as %+v, want %+v", in, got, st)
		}
	}

	// And the other way: what the host encodes (its test agents do) the
	// guest side's type reads back unchanged, modules in order.
	back, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var again State
	if err := json.Unmarshal(back, &again); err != nil || !reflect.DeepEqual(again, st) {
		t.Errorf("round trip: %+v, %v", again, err)
	}
}

func TestPaths(t *testing.T) {
	if got := ModulePath("bonding"); got != "/modules/bonding" {
		t.Errorf("ModulePath = %s", got)
	}
	p := RestartKubeletPath(1500 * time.Millisecond)
	if p != "/restart-kubelet?downtime=1.5s" {
		t.Errorf("RestartKubeletPath = %s", p)
	}
	u, err := url.Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != PathRestartKubelet {
		t.Errorf("path %s, want %s", u.Path, PathRestartKubelet)
	}
	if d, err := time.ParseDuration(u.Query().Get(QueryDowntime)); err != nil || d != 1500*time.Millisecond {
		t.Errorf("downtime %v, %v", d, err)
	}
}

// wireBootTimes pins BootTimes' JSON inside State: nanoseconds on the
// guest's boot clock, unreached milestones left out.
const wireBootTimes = `{"bootID":"b","kernelVersion":"k","modules":[],"boot":{"uptime":6000000000,"init":2037024000,"agentMain":2500000000,"kubeletStart":3000000000}}`

func TestBootTimesWire(t *testing.T) {
	st := State{BootID: "b", KernelVersion: "k", Modules: []string{},
		Boot: &BootTimes{Uptime: 6 * time.Second, Init: 2037024 * time.Microsecond, AgentMain: 2500 * time.Millisecond, KubeletStart: 3 * time.Second}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != wireBootTimes {
		t.Errorf("guest encodes\n%s\nwant\n%s", b, wireBootTimes)
	}
	dec := json.NewDecoder(strings.NewReader(wireBootTimes))
	dec.DisallowUnknownFields()
	var got State
	if err := dec.Decode(&got); err != nil || !reflect.DeepEqual(got, st) {
		t.Errorf("host decodes %+v, %v; want %+v", got, err, st)
	}
}
