package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/internal/shutdown"
)

// The first signal cancels the command; the second runs the forced-exit
// cleanups and exits.
func TestHandleSignals(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cleaned := make(chan struct{})
	shutdown.Register("test cleanup", func() { close(cleaned) })
	exited := make(chan struct{})
	var out bytes.Buffer
	go handleSignals(sigs, cancel, &out, func() { close(exited) })
	sigs <- syscall.SIGINT
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the command")
	}
	select {
	case <-exited:
		t.Fatal("the first signal forced the exit")
	case <-time.After(100 * time.Millisecond):
	}
	sigs <- syscall.SIGTERM
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the second signal did not force the exit")
	}
	select {
	case <-cleaned:
	default:
		t.Error("the forced exit did not run the cleanups")
	}
	if !strings.Contains(out.String(), "send it again to force the exit") || !strings.Contains(out.String(), "forcing the exit after at most 10s of cleanup") {
		t.Errorf("messages: %q", out.String())
	}
}
