#!/usr/bin/env bash
# Builds bin/controller-gen (BIN_DIR, default bin/) from the controller-tools
# version pinned in this directory's go.mod, and rebuilds only when that pin
# (go.mod, go.sum) or this script changes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="$(mkdir -p "${BIN_DIR:-$here/../../bin}" && cd "${BIN_DIR:-$here/../../bin}" && pwd)"
stamp_file="$bin_dir/.controllertools.stamp"

want="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)"
have=""
[ -f "$stamp_file" ] && have="$(cat "$stamp_file")"
if [ "$want" = "$have" ] && [ -x "$bin_dir/controller-gen" ]; then
  exit 0
fi
version="$(awk '$1 == "require" && $2 == "sigs.k8s.io/controller-tools" {print $3}' "$here/go.mod")"
echo "controllertools: building controller-gen $version into $bin_dir" >&2
(cd "$here" && go build -trimpath -o "$bin_dir/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
echo "$want" > "$stamp_file"
