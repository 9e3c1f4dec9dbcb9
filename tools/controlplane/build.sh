#!/usr/bin/env bash
# Builds the embedded control plane's binaries into BIN_DIR (default bin/)
# from the modules pinned under tools/controlplane/: etcd, kube-apiserver and
# kube-controller-manager, one after the other, statically linked
# (CGO_ENABLED=0), as upstream's are. A binary is rebuilt only when
# its module's pins (go.mod, go.sum) or its build recipe change; otherwise
# the script says it is cached. The kind node image's binaries
# (tools/kindnode/build.sh) are built with the same flags and share the
# compile.
#
# It says what it builds and how long each took. While Go compiles, a
# progress bar (packages compiled of those the binary needs) is drawn where
# stdout is a terminal, and a line is printed every PROGRESS_EVERY seconds
# (default 60) elsewhere (tools/gobuild.sh). A first build takes about 11
# minutes on 2 cores.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="$(mkdir -p "${BIN_DIR:-$here/../../bin}" && cd "${BIN_DIR:-$here/../../bin}" && pwd)"
k8s_version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$here/kube/go.mod")"
minor="$(echo "$k8s_version" | cut -d. -f2)"
# The same flags as the kind node image's Kubernetes binaries
# (tools/kindnode/build.sh copies this script's kube-apiserver and
# kube-controller-manager and builds the rest with them: --kube-ldflags).
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
if [ "${1:-}" = --kube-ldflags ]; then echo "$ldflags"; exit 0; fi

# name module package: the binaries, in build order.
components=(
  "etcd etcd go.etcd.io/etcd/server/v3"
  "kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager kube k8s.io/kubernetes/cmd/kube-controller-manager"
)

# duration SECONDS: "45 s", "3 min 12 s".
duration() {
  if [ "$1" -lt 60 ]; then echo "$1 s"; else echo "$(($1 / 60)) min $(($1 % 60)) s"; fi
}

# recipe MODULE PACKAGE: how a binary is built; part of its stamp.
recipe() { echo "CGO_ENABLED=0 go build -trimpath -ldflags '$ldflags' $2 (module $1)"; }

# stamp MODULE PACKAGE: what a binary was built from.
stamp() { { cat "$here/$1/go.mod" "$here/$1/go.sum"; recipe "$1" "$2"; } | sha256sum | cut -d' ' -f1; }

# current NAME MODULE PACKAGE: the binary is there and built from the pins.
current() {
  [ -x "$bin_dir/$1" ] && [ "$(cat "$bin_dir/.$1.stamp" 2>/dev/null)" = "$(stamp "$2" "$3")" ]
}

# build INDEX NAME MODULE PACKAGE: compiles one binary with progress
# (tools/gobuild.sh) and stamps it.
build() {
  local i=$1 name=$2 mod=$3 pkg=$4
  (cd "$here/$mod" && CGO_ENABLED=0 "$here/../gobuild.sh" "controlplane: [$i/${#components[@]}] $name" "$bin_dir/$name" "$pkg" -trimpath -ldflags "$ldflags") || exit $?
  stamp "$mod" "$pkg" >"$bin_dir/.$name.stamp"
}

todo=()
for c in "${components[@]}"; do
  read -r name mod pkg <<<"$c"
  current "$name" "$mod" "$pkg" || todo+=("$name")
done
if [ ${#todo[@]} -eq 0 ]; then
  echo "controlplane: etcd, kube-apiserver and kube-controller-manager are cached in $bin_dir (rebuilt only when the pins under tools/controlplane/ change)"
  exit 0
fi
echo "controlplane: building ${todo[*]} into $bin_dir (k8s.io/kubernetes $k8s_version; a first build takes about 11 minutes on 2 cores, later runs reuse it)"
begin=$SECONDS
i=0
for c in "${components[@]}"; do
  i=$((i + 1))
  read -r name mod pkg <<<"$c"
  if current "$name" "$mod" "$pkg"; then
    echo "controlplane: [$i/${#components[@]}] $name is cached"
    continue
  fi
  build "$i" "$name" "$mod" "$pkg"
done
rm -f "$bin_dir/.kube.stamp" # the stamp of kube-apiserver and kube-controller-manager built together, as this script once did
echo "controlplane: done in $(duration $((SECONDS - begin)))"
