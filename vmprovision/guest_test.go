package vmprovision

import (
	"strings"
	"testing"

	"github.com/bootproof/bootproof/vmprovision/guest"
)

// testKernelVersion is the version of the fake agents' kernel.
const testKernelVersion = "6.1.0-test-amd64"

// testAgentConfig is a valid, defaulted agent configuration for node
// vm-0.
func testAgentConfig(t *testing.T) guest.AgentConfig {
	t.Helper()
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	cfg := guest.AgentConfig{NodeName: "vm-0", APIServer: "https://10.0.2.2:6443", CAData: pem, CertData: pem,
		KeyData: strings.ReplaceAll(pem, "CERTIFICATE", "EC PRIVATE KEY"), ControlSecret: strings.Repeat("0123456789abcdef", 4)}
	if err := cfg.Default(); err != nil {
		t.Fatal(err)
	}
	return cfg
}
