#!/usr/bin/env bash
# 'make kind-image': bootproof's kind node image for the Kubernetes version
# pinned in tools/controlplane/kube, built on this machine with no registry
# (internal/kindimage), and rebuilt only when what it is made of changes:
# the pins under tools/ (tools/controlplane/{kube,etcd} and their build flags, tools/kindnode/*), the
# builder (internal/kindimage, this script) and kind's version in go.mod.
# Its tag carries a hash of those, so a cached image is found by name, and
# its label dev.bootproof.checkout a hash of this checkout's path: a new
# build removes only the images this checkout built before.
#   hack/kind-image.sh          build it unless cached; the tag goes to stdout,
#                               everything else to stderr
#   hack/kind-image.sh --tag    print the tag only
# KIND_IMAGE_REBUILD=1 builds it even when cached (Debian's packages move on).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin_dir="${BIN_DIR:-$PWD/bin}"
k8s_version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' tools/controlplane/kube/go.mod)"
inputs=(tools/controlplane/kube/go.mod tools/controlplane/kube/go.sum tools/controlplane/etcd/go.mod tools/controlplane/etcd/go.sum tools/kindnode/build.sh hack/kind-image.sh)
inputs+=(tools/kindnode/*/go.mod tools/kindnode/*/go.sum)
while IFS= read -r f; do inputs+=("$f"); done < <(find internal/kindimage -type f ! -name '*_test.go' ! -path '*/testdata/*' | LC_ALL=C sort)
stamp="$( { cat "${inputs[@]}"; grep -E '^\s*sigs.k8s.io/kind ' go.mod; tools/controlplane/build.sh --kube-ldflags; } | sha256sum | cut -c1-12)"
tag="bootproof/kind-node:${k8s_version}-${stamp}"
# The images this checkout built carry its label; only they are pruned.
checkout="$(pwd -P | sha256sum | cut -c1-12)"
if [ "${1:-}" = --tag ]; then echo "$tag"; exit 0; fi
exec 3>&1 1>&2 # progress to stderr, the tag alone to stdout (fd 3)

command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 || {
  echo "kind-image: no docker engine answers here; 'make deps-kind' (root, Debian/Ubuntu) installs and starts one" >&2; exit 2; }
if [ -z "${KIND_IMAGE_REBUILD:-}" ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "kind-image: $tag is cached (built $(docker image inspect -f '{{.Created}}' "$tag"))"
  echo "$tag" >&3
  exit 0
fi
start=$SECONDS
echo "kind-image: building $tag (first build: about 10 minutes on 2 cores after the control plane's; later builds reuse Go's build cache and debootstrap's downloads)"
# The builder's own bootproof, beside the node's binaries: bin/bootproof
# may be one that a run elsewhere is using. Static and -trimpath, as the
# control plane, 'make build', bootproof-agent and the runtime shim are
# built: one compile for all.
mkdir -p "$bin_dir/kindnode"
CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} $(tools/buildvcs.sh)" tools/gobuild.sh "kind-image: bootproof" "$bin_dir/kindnode/bootproof" ./cmd/bootproof -trimpath
BIN_DIR="$bin_dir" tools/kindnode/build.sh
# The node's etcd is the embedded plane's (tools/kindnode/build.sh copies
# it), not the version kubeadm asks for: its image is tagged for it and the
# image's label tells bootproof's kind clusters to run it.
etcd_version="$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' tools/controlplane/etcd/go.mod)"
# --prune: this checkout's older images are superseded, and go with their
# layers; images of other checkouts (or built by hand) are never touched.
"$bin_dir/kindnode/bootproof" kind build-node-image --bin-dir "$bin_dir/kindnode" --tag "$tag" --etcd-version "${etcd_version#v}" \
  --label "dev.bootproof.checkout=$checkout" --prune
echo "kind-image: built $tag in $((SECONDS - start))s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
echo "$tag" >&3
