package agentapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSecret(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecret()
	if a == b {
		t.Errorf("two secrets are equal: %s", a)
	}
	if err := CheckSecret(a); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "abc", strings.Repeat("z", 2*SecretBytes), a[1:]} {
		if CheckSecret(bad) == nil {
			t.Errorf("CheckSecret(%q) = nil, want an error", bad)
		}
	}
}

func TestAuthorized(t *testing.T) {
	secret, _ := NewSecret()
	other, _ := NewSecret()
	req := func(header string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1"+PathReboot, nil)
		if header != "" {
			r.Header.Set(HeaderAuthorization, header)
		}
		return r
	}
	withSecret := req("")
	SetAuthorization(withSecret, secret)
	if got := withSecret.Header.Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("SetAuthorization sets %q", got)
	}
	tests := []struct {
		name   string
		r      *http.Request
		secret string
		want   bool
	}{
		{"the secret", withSecret, secret, true},
		{"scheme in lower case", req("bearer " + secret), secret, true},
		{"no header", req(""), secret, false},
		{"another node's secret", req("Bearer " + other), secret, false},
		{"a prefix of the secret", req("Bearer " + secret[:10]), secret, false},
		{"basic scheme", req("Basic " + secret), secret, false},
		{"no scheme", req(secret), secret, false},
		{"agent without a secret", req("Bearer "), "", false},
	}
	for _, tt := range tests {
		if got := Authorized(tt.r, tt.secret); got != tt.want {
			t.Errorf("%s: Authorized = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDialWire(t *testing.T) {
	p := DialPath("10.0.2.2:2379", 2*time.Second)
	u, err := url.Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != PathDial || u.Query().Get(QueryAddr) != "10.0.2.2:2379" || u.Query().Get(QueryTimeout) != "2s" {
		t.Errorf("DialPath = %s", p)
	}
	const wire = `{"addr":"10.0.2.2:2379","connected":false,"error":"i/o timeout","took":2000000000}`
	b, err := json.Marshal(DialResult{Addr: "10.0.2.2:2379", Error: "i/o timeout", Took: 2 * time.Second})
	if err != nil || string(b) != wire {
		t.Errorf("DialResult encodes as %s (%v), want %s", b, err, wire)
	}
}
