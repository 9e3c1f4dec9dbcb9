#!/usr/bin/env bash
# Regenerates kmm's generated files with the controller-gen pinned in
# tools/controllertools:
#   kmm/api/v1beta1/zz_generated.deepcopy.go   (DeepCopy, runtime.Object)
#   kmm/config/crd/*.yaml                      (the CRD)
#   harness/controlplane/cpbuild/pins/*        (copies of the control
#       plane's pins, tools/controlplane/{etcd,kube}/go.{mod,sum}, which
#       travel inside bootproof for 'bootproof controlplane build')
# With --verify it writes nothing in the tree and fails when a checked-in
# file differs from what the generator produces now.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
BIN_DIR="${BIN_DIR:-$root/bin}" tools/controllertools/build.sh
gen="${BIN_DIR:-$root/bin}/controller-gen"

api_pkgs=./kmm/api/...
api_dir=kmm/api/v1beta1
crd_dir=kmm/config/crd

pins=harness/controlplane/cpbuild/pins
# copy_pins DIR: copies the control plane's pins into DIR.
copy_pins() {
  mkdir -p "$1"
  for m in etcd kube; do
    cp "tools/controlplane/$m/go.mod" "$1/$m.mod"
    cp "tools/controlplane/$m/go.sum" "$1/$m.sum"
  done
}

if [ "${1:-}" != "--verify" ]; then
  copy_pins "$pins"
  "$gen" object paths="$api_pkgs"
  "$gen" crd paths="$api_pkgs" output:crd:dir="$crd_dir"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$gen" object paths="$api_pkgs" output:object:dir="$tmp/object"
"$gen" crd paths="$api_pkgs" output:crd:dir="$tmp/crd"
stale=0
check() { # generated file, checked-in file
  if ! diff -u "$2" "$1" >"$tmp/diff" 2>&1; then
    echo "generated file is stale: $2 (run 'make generate')" >&2
    head -40 "$tmp/diff" >&2
    stale=1
  fi
}
check "$tmp/object/zz_generated.deepcopy.go" "$api_dir/zz_generated.deepcopy.go"
for f in "$tmp"/crd/*.yaml; do
  check "$f" "$crd_dir/$(basename "$f")"
done
copy_pins "$tmp/pins"
for f in "$tmp"/pins/*; do
  check "$f" "$pins/$(basename "$f")"
done
for f in "$crd_dir"/*.yaml; do
  [ -e "$tmp/crd/$(basename "$f")" ] || { echo "not generated any more, remove it: $f" >&2; stale=1; }
done
exit "$stale"
