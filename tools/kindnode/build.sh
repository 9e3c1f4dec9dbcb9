#!/usr/bin/env bash
# Builds every binary of bootproof's kind node image into BIN_DIR/kindnode
# (default bin/kindnode), statically linked, from the pins under tools/:
#   tools/controlplane/kube  kube-apiserver and kube-controller-manager: the
#                            embedded plane's own binaries (tools/controlplane/build.sh,
#                            same pins, same flags), copied, not built again;
#                            kube-scheduler, kube-proxy, kubelet, kubeadm, kubectl
#   tools/controlplane/etcd  etcd: the embedded plane's too (3.6; kubeadm asks
#                            for 3.7, and the image's label tells kind clusters
#                            to run the plane's: hack/kind-image.sh), copied
#   tools/kindnode/containerd containerd, ctr, containerd-shim-runc-v2
#   tools/kindnode/runc      runc (cgo, static, with seccomp: needs gcc and libseccomp-dev)
#   tools/kindnode/cni       host-local, loopback, ptp, portmap
#   tools/kindnode/crictl    crictl
#   k8s.io/kubernetes's build/pause/linux/pause.c   pause (gcc -static)
# CoreDNS is not built: the node image has none (internal/kindimage.SkippedAddons).
# Each group is rebuilt only when its pins (go.mod, go.sum) or this script
# change (the Kubernetes group also when the plane's flags do); each says
# what it builds and how long it took.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$(cd "$here/.." && pwd)"
out="${BIN_DIR:-$tools/../bin}/kindnode"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
kube="$tools/controlplane/kube"
k8s_version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$kube/go.mod")"
export CGO_ENABLED=0

# stamp DIR: what a group is built from: its module's pins, this script
# and, for the Kubernetes group, the plane's flags it shares.
stamp() {
  { cat "$1/go.mod" "$1/go.sum" "${BASH_SOURCE[0]}"; if [ "$1" = "$kube" ]; then echo "$kube_ldflags"; fi; } | sha256sum | cut -d' ' -f1
}

# group NAME MODULE_DIR "BINARIES" COMMAND...: run COMMAND in MODULE_DIR
# unless the stamp is current and every binary is there.
group() {
  local name="$1" dir="$2" bins="$3"; shift 3
  local want have="" all=1
  want="$(stamp "$dir")"
  [ -f "$out/.$name.stamp" ] && have="$(cat "$out/.$name.stamp")"
  for b in $bins; do [ -x "$out/$b" ] || all=0; done
  if [ "$want" = "$have" ] && [ "$all" = 1 ]; then
    echo "kindnode: $name is current ($bins)"
    return
  fi
  echo "kindnode: building $name ($bins) ..."
  local start=$SECONDS
  (cd "$dir" && "$@")
  echo "$want" > "$out/.$name.stamp"
  echo "kindnode: built $name in $((SECONDS - start))s"
}

# The plane's etcd, kube-apiserver and kube-controller-manager, built (or
# found cached) by its own script from the same modules with the same
# flags, are the image's: copying them saves etcd's whole compile and two
# of the largest links.
plane_bin="$(cd "${BIN_DIR:-$tools/../bin}" && pwd)"
BIN_DIR="$plane_bin" "$tools/controlplane/build.sh"
for b in etcd kube-apiserver kube-controller-manager; do cp -p "$plane_bin/$b" "$out/$b"; done
kube_ldflags="$(BIN_DIR="$plane_bin" "$tools/controlplane/build.sh" --kube-ldflags)"
group kube "$kube" "kube-scheduler kube-proxy kubelet kubeadm kubectl" \
  go build -trimpath -ldflags "$kube_ldflags" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubectl

etcd_version="$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' "$tools/controlplane/etcd/go.mod")"

containerd_version="$(awk '$1 == "require" && $2 == "github.com/containerd/containerd/v2" {print $3}' "$here/containerd/go.mod")"
group containerd "$here/containerd" "containerd ctr containerd-shim-runc-v2" \
  go build -trimpath -tags "no_aufs no_zfs no_btrfs no_devmapper" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" -o "$out/" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2

runc_version="$(awk '$1 == "require" && $2 == "github.com/opencontainers/runc" {print $3}' "$here/runc/go.mod")"
group runc "$here/runc" "runc" \
  env CGO_ENABLED=1 go build -trimpath -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -extldflags -static -X main.version=${runc_version#v}" -o "$out/runc" github.com/opencontainers/runc

group cni "$here/cni" "host-local loopback ptp portmap" \
  go build -trimpath -ldflags "-s -w" -o "$out/" \
    github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/main/loopback \
    github.com/containernetworking/plugins/plugins/main/ptp github.com/containernetworking/plugins/plugins/meta/portmap

crictl_version="$(awk '$1 == "require" && $2 == "sigs.k8s.io/cri-tools" {print $3}' "$here/crictl/go.mod")"
group crictl "$here/crictl" "crictl" \
  go build -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version" -o "$out/crictl" sigs.k8s.io/cri-tools/cmd/crictl

build_pause() {
  local src
  src="$(go mod download -json k8s.io/kubernetes | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')/build/pause/linux"
  local tag
  tag="$(awk -F'[ =?]+' '$1 == "TAG" {print $2}' "$src/../Makefile")"
  gcc -Os -Wall -Werror -static -DVERSION="v$tag-bootproof" -o "$out/pause" "$src/pause.c"
  strip "$out/pause"
}
group pause "$kube" "pause" build_pause

echo "kindnode: binaries current in $out (Kubernetes $k8s_version, etcd $etcd_version, containerd $containerd_version, runc $runc_version)"
