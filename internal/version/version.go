package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// Set by a release build (-ldflags "-X ...=..."); empty otherwise, when
// the Go toolchain's build information is used.
var (
	// releaseVersion is the release's version, e.g. v0.4.0.
	releaseVersion string
	// releaseCommit is the commit the release was built from.
	releaseCommit string
	// releaseDate is when the release was built (RFC 3339).
	releaseDate string
)

// Unknown is what a field says when the build recorded nothing for it.
const Unknown = "unknown"

// KindNodeImageRepository is the repository of the kind node image
// bootproof builds and expects ('make kind-image'); its tag starts with
// the pinned Kubernetes version.
const KindNodeImageRepository = "bootproof/kind-node"

// Info describes this bootproof build.
type Info struct {
	// Version is the module's version: a release's tag, the version 'go
	// install …@version' fetched, or "(devel)" for a build in a checkout.
	Version string `json:"version"`
	// Commit is the VCS revision built, with "-dirty" when the tree had
	// changes; "unknown" when the build did not record one.
	Commit string `json:"commit"`
	// Date is when that commit was made (a release: when it was built).
	Date string `json:"date"`
	// GoVersion and Platform (GOOS/GOARCH) of the binary.
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Kubernetes is the pinned k8s.io/kubernetes version of the embedded
	// control plane's kube-apiserver and kube-controller-manager.
	Kubernetes string `json:"kubernetes"`
	// Etcd is the pinned etcd server version.
	Etcd string `json:"etcd"`
	// KindNodeImage is the node image a kind cluster is expected to run:
	// the repository and the tag's prefix (the rest is a stamp of the
	// image's inputs).
	KindNodeImage string `json:"kindNodeImage"`
}

// Get returns this build's Info.
func Get() Info {
	in := Info{Version: "(devel)", Commit: Unknown, Date: Unknown, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Kubernetes: cpbuild.KubernetesVersion(), Etcd: cpbuild.EtcdVersion()}
	in.KindNodeImage = KindNodeImageRepository + ":" + in.Kubernetes + "-*"
	if bi, ok := debug.ReadBuildInfo(); ok {
		fromBuildInfo(&in, bi)
	}
	if releaseVersion != "" {
		in.Version = releaseVersion
	}
	if releaseCommit != "" {
		in.Commit = releaseCommit
	}
	if releaseDate != "" {
		in.Date = releaseDate
	}
	return in
}

// fromBuildInfo takes the module version and the VCS stamps Go recorded.
func fromBuildInfo(in *Info, bi *debug.BuildInfo) {
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.Date = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && in.Commit != Unknown {
		in.Commit += "-dirty"
	}
}

// WriteText writes in as aligned "field: value" lines, as kind and kwok
// print theirs.
func (in Info) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, f := range [][2]string{
		{"bootproof", in.Version}, {"commit", in.Commit}, {"date", in.Date},
		{"go", in.GoVersion + " " + in.Platform},
		{"kubernetes", in.Kubernetes + " (embedded control plane: kube-apiserver, kube-controller-manager)"},
		{"etcd", in.Etcd}, {"kind node image", in.KindNodeImage},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], f[1])
	}
	return tw.Flush()
}
