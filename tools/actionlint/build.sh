#!/usr/bin/env bash
# Builds bin/actionlint from the version pinned in tools/actionlint/go.mod,
# only when the pin changes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="${BIN_DIR:-$here/../../bin}"
mkdir -p "$bin_dir"
want="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)"
if [ -x "$bin_dir/actionlint" ] && [ "$(cat "$bin_dir/.actionlint.stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "actionlint: building $(grep -m1 "github.com/rhysd/actionlint " "$here/go.mod" | sed "s/^require //") into $bin_dir"
(cd "$here" && go build -trimpath -o "$bin_dir/actionlint" github.com/rhysd/actionlint/cmd/actionlint)
echo "$want" > "$bin_dir/.actionlint.stamp"
