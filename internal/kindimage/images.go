package kindimage

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Component is one control-plane image kubeadm asks for, recognised by
// the last element of its repository.
type Component struct {
	// Repo is the image repository's last element (kube-apiserver, etcd,
	// pause, ...).
	Repo string
	// Binary is the file in the bin directory the image holds.
	Binary string
	// Path is where the image holds it.
	Path string
	// Entrypoint and User of the image (kubeadm's manifests give the
	// command of the Kubernetes images; etcd and pause run their
	// entrypoint).
	Entrypoint []string
	User       string
	// NeedsUserland: the image holds the Debian userland of
	// ProxyPackages as its base layer (kube-proxy runs iptables and nft).
	NeedsUserland bool
	// VersionArgs make the binary print its version, which must contain
	// the image tag (without a "-0"-style build suffix).
	VersionArgs []string
}

// Components are the images bootproof builds, by repository.
var Components = map[string]Component{
	"kube-apiserver":          {Repo: "kube-apiserver", Binary: "kube-apiserver", Path: "/usr/local/bin/kube-apiserver", VersionArgs: []string{"--version"}},
	"kube-controller-manager": {Repo: "kube-controller-manager", Binary: "kube-controller-manager", Path: "/usr/local/bin/kube-controller-manager", VersionArgs: []string{"--version"}},
	"kube-scheduler":          {Repo: "kube-scheduler", Binary: "kube-scheduler", Path: "/usr/local/bin/kube-scheduler", VersionArgs: []string{"--version"}},
	"kube-proxy":              {Repo: "kube-proxy", Binary: "kube-proxy", Path: "/usr/local/bin/kube-proxy", NeedsUserland: true, VersionArgs: []string{"--version"}},
	"etcd":                    {Repo: "etcd", Binary: "etcd", Path: "/usr/local/bin/etcd", VersionArgs: []string{"--version"}},
	"pause":                   {Repo: "pause", Binary: "pause", Path: "/pause", Entrypoint: []string{"/pause"}, User: "65535:65535", VersionArgs: []string{"-v"}},
}

// SkippedAddons are the kubeadm addons bootproof's node image leaves out,
// by the image repository kubeadm lists for each, with the kubeadm init
// phase that installs it. The image names these phases in its
// LabelSkipPhases label, and harness/cluster's kind configuration skips
// them for a node image that carries it (kind's published images keep
// their addons). CoreDNS is one: nothing a run puts in the cluster
// resolves a name (the operator's pods reach the API server by the
// kubernetes Service's address, which kube-proxy routes), and its image
// was minutes of a cold node-image build.
var SkippedAddons = map[string]string{"coredns": "addon/coredns"}

// LabelSkipPhases is the node image's label naming the kubeadm init
// phases a cluster of it must skip (comma-separated, sorted): the addons
// whose images it lacks.
const LabelSkipPhases = "io.bootproof.kind-node.skip-phases"

// SkipPhases are SkippedAddons' phases, sorted: the value of
// LabelSkipPhases.
func SkipPhases() []string {
	phases := make([]string, 0, len(SkippedAddons))
	for _, phase := range SkippedAddons {
		phases = append(phases, phase)
	}
	slices.Sort(phases)
	return phases
}

// LabelEtcdImageTag is the node image's label naming its etcd image's
// tag where that is not the one kubeadm asks for (Config.EtcdVersion):
// harness/cluster's kind configuration gives it to kubeadm
// (etcd.local.imageTag) for a node image that carries it.
const LabelEtcdImageTag = "io.bootproof.kind-node.etcd-image-tag"

// EtcdImageTag is registry.k8s.io's tag of an etcd version's image:
// "3.6.16" is "3.6.16-0".
func EtcdImageTag(version string) string { return version + "-0" }

// etcdVersion matches an etcd release version as Config.EtcdVersion takes
// it: "3.6.16".
var etcdVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// ImageRef is a parsed image reference: repository and tag.
type ImageRef struct {
	Repository, Tag string
}

func (r ImageRef) String() string { return r.Repository + ":" + r.Tag }

// ParseImageRef splits "registry.k8s.io/etcd:3.7.0-0"; a digest is not
// accepted (the images are built here, they have no registry digest).
func ParseImageRef(ref string) (ImageRef, error) {
	if strings.Contains(ref, "@") {
		return ImageRef{}, fmt.Errorf("image %q: a digest is not accepted", ref)
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ImageRef{}, fmt.Errorf("image %q has no tag", ref)
	}
	return ImageRef{Repository: ref[:i], Tag: ref[i+1:]}, nil
}

// PlannedImage is an image to build: its reference and component.
type PlannedImage struct {
	Ref       ImageRef
	Component Component
}

// PlanImages maps the images kubeadm asks for ('kubeadm config images
// list') to the components built here, leaving out the images of
// SkippedAddons. An image bootproof does not build is an error naming it:
// the node could not start without it, and nothing can be pulled.
func PlanImages(required []string) ([]PlannedImage, error) {
	var plan []PlannedImage
	var unknown []string
	for _, raw := range required {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		ref, err := ParseImageRef(raw)
		if err != nil {
			return nil, err
		}
		if _, skipped := SkippedAddons[path.Base(ref.Repository)]; skipped {
			continue
		}
		c, ok := Components[path.Base(ref.Repository)]
		if !ok {
			unknown = append(unknown, raw)
			continue
		}
		plan = append(plan, PlannedImage{Ref: ref, Component: c})
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("kubeadm asks for images bootproof does not build: %s (known: kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, etcd, pause; left out with their addons: coredns)", strings.Join(unknown, ", "))
	}
	return plan, nil
}

// VersionMatches reports whether a binary's version output holds the
// image tag's version: "v1.37.2" in "Kubernetes v1.37.2", "3.7.0-0" as
// "3.7.0" in "etcd Version: 3.7.0", "v1.14.6" as "1.14.6" in
// "CoreDNS-1.14.6" (an image this package once built).
func VersionMatches(tag, output string) bool {
	v := strings.TrimPrefix(tag, "v")
	if i := strings.LastIndex(v, "-"); i > 0 && isDigits(v[i+1:]) {
		v = v[:i] // etcd's "-0" image revision
	}
	for _, field := range strings.FieldsFunc(output, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '-' || r == ',' }) {
		if strings.TrimPrefix(field, "v") == v {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Spec is the archive's specification, given the bin directory and the
// userland layer's path (for kube-proxy).
func (p PlannedImage) Spec(binDir, userland string) ImageSpec {
	s := ImageSpec{Ref: p.Ref.String(), Entrypoint: p.Component.Entrypoint, User: p.Component.User,
		Files: []File{{Path: p.Component.Path, Source: filepath.Join(binDir, p.Component.Binary), Mode: 0o755}}}
	if p.Component.NeedsUserland {
		s.BaseLayer = userland
	}
	return s
}

// ArchiveName is the archive's file name.
func (p PlannedImage) ArchiveName() string {
	return strings.NewReplacer("/", "_", ":", "_").Replace(p.Ref.String()) + ".tar"
}
