package controlplane

import (
	"errors"
	"testing"
)

// TestPortInUseIsRetried: there are no port flags; Start chooses free
// loopback ports itself, and a process that fails because one was taken
// before it bound it ("address already in use") is recognised, so Start
// tries again with new ports instead of failing the run.
func TestPortInUseIsRetried(t *testing.T) {
	taken := &ExitError{Process: BinKubeAPIServer, Status: "exit status 1",
		Tail: "  E0101 failed to listen on 127.0.0.1:41234: listen tcp 127.0.0.1:41234: bind: address already in use"}
	if !errors.Is(taken, errPortInUse) {
		t.Error("a bind failure is not classified as a taken port")
	}
	other := &ExitError{Process: BinEtcd, Status: "exit status 1", Tail: "  invalid flag"}
	if errors.Is(other, errPortInUse) {
		t.Error("another failure is classified as a taken port")
	}
}
