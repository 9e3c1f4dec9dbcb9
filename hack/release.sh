#!/usr/bin/env bash
# Builds a bootproof release into OUT (default _output/release): for
# linux/amd64 and linux/arm64, the bootproof executable (static, -trimpath,
# stamped with the release's version, commit and date: 'bootproof version'
# prints them) and the operator image of examples/deploy/ (the archive
# 'bootproof kind build-operator-image' writes, for that architecture),
# then checksums.txt (SHA-256) over all of them. The release workflow
# (.github/workflows/release.yaml) runs it on a tag and publishes OUT.
#   hack/release.sh [--snapshot] [--out DIR]
# The version is $VERSION, else the tag checked out (git describe
# --exact-match); --snapshot (the dry run 'make verify' does) takes
# v0.0.0-snapshot-<commit> instead and then checks what it built: the
# checksums, and that the executable of this machine's architecture
# reports the stamped version and the pinned Kubernetes version.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

snapshot=0 out=_output/release
while [ $# -gt 0 ]; do
  case "$1" in
    --snapshot) snapshot=1 ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    *) echo "release: unknown argument $1: accepted: --snapshot, --out DIR" >&2; exit 2 ;;
  esac
  shift
done
go="${GO:-go}"
platforms=(linux/amd64 linux/arm64)
pkg=github.com/bootproof/bootproof/internal/version

commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
date="$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)"
if [ "$snapshot" = 1 ]; then
  version="v0.0.0-snapshot-${commit:0:12}"
else
  version="${VERSION:-$(git describe --tags --exact-match 2>/dev/null || true)}"
  [ -n "$version" ] || { echo "release: no version: check out a tag (vX.Y.Z) or set VERSION, or pass --snapshot for a dry run" >&2; exit 2; }
fi
case "$version" in
  v[0-9]*) ;;
  *) echo "release: version $version: accepted: vMAJOR.MINOR.PATCH[-suffix]" >&2; exit 2 ;;
esac

rm -rf "$out"
mkdir -p "$out"
ldflags="-s -w -X $pkg.releaseVersion=$version -X $pkg.releaseCommit=$commit -X $pkg.releaseDate=$date"
host="$(CGO_ENABLED=0 "$go" env GOOS)/$(CGO_ENABLED=0 "$go" env GOARCH)"
host_exe=""
echo "release: bootproof $version (commit $commit) for ${platforms[*]} into $out"
for p in "${platforms[@]}"; do
  os="${p%/*}" arch="${p#*/}"
  exe="$out/bootproof_${version}_${os}_${arch}"
  CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" tools/gobuild.sh "release: $p" "$exe" ./cmd/bootproof -trimpath -ldflags "$ldflags"
  [ "$p" = "$host" ] && host_exe="$exe"
done
[ -n "$host_exe" ] || { echo "release: this machine ($host) is none of ${platforms[*]}: it cannot write the operator images" >&2; exit 2; }
for p in "${platforms[@]}"; do
  os="${p%/*}" arch="${p#*/}"
  "$host_exe" kind build-operator-image --executable "$out/bootproof_${version}_${os}_${arch}" \
    --out "$out/bootproof-operator-image_${version}_${os}_${arch}.tar"
done
(cd "$out" && sha256sum -- * >checksums.txt)
echo "release: $(ls "$out" | wc -l) files in $out (checksums.txt: SHA-256)"

if [ "$snapshot" = 1 ]; then
  (cd "$out" && sha256sum --quiet -c checksums.txt)
  got="$("$host_exe" version --output json)"
  k8s="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' tools/controlplane/kube/go.mod)"
  for want in "\"version\": \"$version\"" "\"commit\": \"$commit\"" "\"kubernetes\": \"$k8s\""; do
    case "$got" in
      *"$want"*) ;;
      *) echo "release: the $host executable's version lacks $want:" >&2; echo "$got" >&2; exit 1 ;;
    esac
  done
  echo "release: dry run ok: checksums verify, the $host executable reports $version, commit $commit and Kubernetes $k8s"
fi
