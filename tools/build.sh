#!/usr/bin/env bash
# Builds bin/NAME from the Go package PKG pinned in tools/DIR/go.mod, only
# when the pin (go.mod, go.sum or this script) changes.
#   tools/build.sh DIR NAME PKG
# e.g. tools/build.sh golangci golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: tools/build.sh DIR NAME PKG (DIR under tools/, NAME of the binary in bin/, PKG its Go package)" >&2
  exit 2
fi
dir="$1" name="$2" pkg="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/$dir"
[ -f "$mod/go.mod" ] || { echo "tools/build.sh: no module at tools/$dir (want tools/$dir/go.mod)" >&2; exit 2; }
bin_dir="${BIN_DIR:-$here/../bin}"
mkdir -p "$bin_dir"
want="$(cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [ -x "$bin_dir/$name" ] && [ "$(cat "$bin_dir/.$name.stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "$name: building $pkg at $(grep -m1 -E "^(require )?[[:space:]]*${pkg%%/cmd/*} " "$mod/go.mod" | awk '{print $NF}') into $bin_dir"
(cd "$mod" && go build -trimpath -o "$bin_dir/$name" "$pkg")
echo "$want" > "$bin_dir/.$name.stamp"
