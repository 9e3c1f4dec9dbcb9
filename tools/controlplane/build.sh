#!/usr/bin/env bash
# Builds the embedded control plane's binaries - etcd, kube-apiserver and
# kube-controller-manager - into BIN_DIR (default bin/) from the modules
# pinned under tools/controlplane/, through the code every installed
# bootproof builds them with: 'bootproof controlplane build --dir BIN_DIR'
# (harness/controlplane/cpbuild, whose embedded copy of the pins 'make
# generate' keeps equal to these). A binary is rebuilt only when its pins
# or its build recipe change; otherwise it says they are cached. It says
# what it builds, how long each took, and how the compile goes (a line
# every minute, a progress bar on a terminal). A first build takes about
# 11 minutes on 2 cores.
#   tools/controlplane/build.sh                 build (or find cached)
#   tools/controlplane/build.sh --kube-ldflags  print the Kubernetes
#                                               binaries' linker flags
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin_dir="$(mkdir -p "${BIN_DIR:-$root/bin}" && cd "${BIN_DIR:-$root/bin}" && pwd)"
go="${GO:-go}"
cd "$root"
# Building ./cmd/bootproof as root in a checkout another user owns needs
# -buildvcs=false (tools/buildvcs.sh says when).
GOFLAGS="$("$here/../buildvcs.sh" "$root") ${GOFLAGS:-}"
export GOFLAGS
if [ "${1:-}" = --kube-ldflags ]; then
  exec "$go" run ./cmd/bootproof controlplane build --print-ldflags
fi

# This checkout's bootproof, built aside (bin/bootproof may be one a run is
# using) with progress: on a cold cache it is minutes of compiling.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$here/../gobuild.sh" "controlplane: bootproof" "$tmp/bootproof" ./cmd/bootproof
# All three binaries into the checkout's bin/, whatever envtest's
# $KUBEBUILDER_ASSETS holds.
env -u KUBEBUILDER_ASSETS "$tmp/bootproof" controlplane build --dir "$bin_dir"
