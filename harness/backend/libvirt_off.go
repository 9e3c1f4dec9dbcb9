//go:build !libvirt

package backend

import (
	"context"
	"errors"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios"
)

// CheckLibvirtBuild reports whether this binary was built with the
// libvirt build tag (nil: it was).
func CheckLibvirtBuild() error { return errNoLibvirt }

// errNoLibvirt says how to get a binary with VM support.
var errNoLibvirt = errors.New("this bootproof was built without libvirt support: build it with 'make build-libvirt' (go build -tags libvirt, needs the libvirt-dev headers; 'make deps-libvirt' installs them)")

// Libvirt is the libvirt VM backend; this build has none.
type Libvirt struct {
	nodeapi.NodeBackend
	Accel         string
	KernelVersion string
}

// StartLibvirt fails: the binary was built without the libvirt tag.
func StartLibvirt(context.Context, scenarios.Cluster, LibvirtConfig) (*Libvirt, error) {
	return nil, errNoLibvirt
}

// Close does nothing.
func (l *Libvirt) Close() error { return nil }

// SweepLibvirt fails: the binary was built without the libvirt tag.
func SweepLibvirt(string, bool) ([]string, error) { return nil, errNoLibvirt }

// CleanupLibvirt fails: the binary was built without the libvirt tag.
func CleanupLibvirt(string, string) ([]string, error) { return nil, errNoLibvirt }
