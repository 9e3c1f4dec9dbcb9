package cpbuild

import (
	"embed"
	"fmt"
	"path"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"
)

//go:embed pins/*.mod pins/*.sum
var pins embed.FS

// Module paths pinned in pins/.
const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdModule       = "go.etcd.io/etcd/server/v3"
)

// Component is one binary and where it is built from.
type Component struct {
	// Binary is the executable's file name.
	Binary string
	// Module names the pinned module it is built in (pins/<Module>.mod).
	Module string
	// Package is the main package built.
	Package string
}

// Components are the control plane's binaries, in build order.
var Components = []Component{
	{Binary: "etcd", Module: "etcd", Package: etcdModule},
	{Binary: "kube-apiserver", Module: "kube", Package: "k8s.io/kubernetes/cmd/kube-apiserver"},
	{Binary: "kube-controller-manager", Module: "kube", Package: "k8s.io/kubernetes/cmd/kube-controller-manager"},
}

// pinned are the module files and the versions read from them.
type pinned struct {
	files             map[string][2][]byte // module -> go.mod, go.sum
	kubernetes, etcdV string
}

var loadPins = sync.OnceValues(func() (*pinned, error) {
	p := &pinned{files: map[string][2][]byte{}}
	for _, m := range []string{"etcd", "kube"} {
		mod, err := pins.ReadFile(path.Join("pins", m+".mod"))
		if err != nil {
			return nil, err
		}
		sum, err := pins.ReadFile(path.Join("pins", m+".sum"))
		if err != nil {
			return nil, err
		}
		p.files[m] = [2][]byte{mod, sum}
		f, err := modfile.ParseLax(m+".mod", mod, nil)
		if err != nil {
			return nil, fmt.Errorf("pins of module %s: %w", m, err)
		}
		for _, r := range f.Require {
			switch r.Mod.Path {
			case kubernetesModule:
				p.kubernetes = r.Mod.Version
			case etcdModule:
				p.etcdV = r.Mod.Version
			}
		}
	}
	if p.kubernetes == "" || p.etcdV == "" {
		return nil, fmt.Errorf("pins name no %s or no %s", kubernetesModule, etcdModule)
	}
	return p, nil
})

// mustPins returns the embedded pins; they are part of the binary, so a
// failure to read them is a build defect (TestPins guards it).
func mustPins() *pinned {
	p, err := loadPins()
	if err != nil {
		panic(fmt.Sprintf("cpbuild: embedded pins: %v", err))
	}
	return p
}

// goVersion is the Go version the pins need (their go directive).
func goVersion() string {
	mod, _, err := ModuleFiles("kube")
	if err != nil {
		return "1.26"
	}
	f, err := modfile.ParseLax("kube.mod", mod, nil)
	if err != nil || f.Go == nil {
		return "1.26"
	}
	return f.Go.Version
}

// KubernetesVersion is the pinned k8s.io/kubernetes version (e.g. v1.37.2):
// that of kube-apiserver and kube-controller-manager.
func KubernetesVersion() string { return mustPins().kubernetes }

// EtcdVersion is the pinned etcd server version (e.g. v3.6.16).
func EtcdVersion() string { return mustPins().etcdV }

// ModuleFiles returns the go.mod and go.sum a module is built with.
func ModuleFiles(module string) (goMod, goSum []byte, err error) {
	f, ok := mustPins().files[module]
	if !ok {
		return nil, nil, fmt.Errorf("no pinned module %q: accepted: etcd, kube", module)
	}
	return f[0], f[1], nil
}

// Ldflags are the linker flags of kube-apiserver and kube-controller-manager
// (the kind node image's Kubernetes binaries take the same): stripped, and
// stamped with the pinned version as upstream's release binaries are.
func Ldflags() string {
	v := KubernetesVersion()
	minor := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)[1]
	return fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=%s -X k8s.io/client-go/pkg/version.gitVersion=%s", v, minor, v)
}
