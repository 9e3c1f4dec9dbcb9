#!/usr/bin/env bash
# Builds the embedded control plane's binaries into BIN_DIR (default bin/)
# from the modules pinned under tools/controlplane/, and rebuilds only when
# those pins (go.mod, go.sum) or this script change. They are statically
# linked (CGO_ENABLED=0), as upstream's are, and share their build with the
# kind node image's (tools/kindnode/build.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="$(mkdir -p "${BIN_DIR:-$here/../../bin}" && cd "${BIN_DIR:-$here/../../bin}" && pwd)"
k8s_version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$here/kube/go.mod")"
minor="$(echo "$k8s_version" | cut -d. -f2)"

stamp() { cat "$here/$1/go.mod" "$here/$1/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1; }

build() { # module, stamp name, output directory, packages...
  local mod="$1" name="$2" out="$3"; shift 3
  local want have=""
  want="$(stamp "$mod")"
  [ -f "$bin_dir/.$mod.stamp" ] && have="$(cat "$bin_dir/.$mod.stamp")"
  local all_there=1
  for exe in $name; do [ -x "$bin_dir/$exe" ] || all_there=0; done
  if [ "$want" = "$have" ] && [ "$all_there" = 1 ]; then
    echo "controlplane: $mod binaries are current in $bin_dir"
    return
  fi
  echo "controlplane: building $* (first build takes several minutes)"
  local start=$SECONDS
  (cd "$here/$mod" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$out" "$@")
  echo "$want" > "$bin_dir/.$mod.stamp"
  echo "controlplane: built $mod in $((SECONDS - start))s"
}

build kube "kube-apiserver kube-controller-manager" "$bin_dir/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
build etcd etcd "$bin_dir/etcd" go.etcd.io/etcd/server/v3
