#!/usr/bin/env bash
# Builds one Go binary and says how it goes: the builds here that take
# minutes (the control plane, bootproof itself on a cold cache) must not
# look hung.
#   tools/gobuild.sh TAG OUT PKG [go build flags...]
# e.g. tools/gobuild.sh bootproof bin/bootproof ./cmd/bootproof
# It runs in the current directory (the module of PKG), with the caller's
# environment (CGO_ENABLED, GOFLAGS; $GO names the go command, default go).
# It prints "TAG: building PKG (N
# packages)", then, while Go compiles, a progress bar (packages compiled of
# those PKG needs) where stdout is a terminal and a line every
# PROGRESS_EVERY seconds (default 60) elsewhere, and at the end how long it
# took and how many packages were compiled rather than taken from Go's build
# cache. A failed build prints the compiler's output to stderr and exits
# with go build's status.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: tools/gobuild.sh TAG OUT PKG [go build flags...]" >&2
  exit 2
fi
tag="$1" out="$2" pkg="$3"
shift 3
every="${PROGRESS_EVERY:-60}"
go="${GO:-go}"
tty=0
[ -t 1 ] && tty=1

# duration SECONDS: "45 s", "3 min 12 s".
duration() {
  if [ "$1" -lt 60 ]; then echo "$1 s"; else echo "$(($1 / 60)) min $(($1 % 60)) s"; fi
}

# bar COMPILED TOTAL START: redraws the progress bar on the terminal.
bar() {
  local n=$1 total=$2 start=$3 width=30 filled pct
  if ((total < 1)); then total=1; fi
  if ((n > total)); then n=$total; fi
  filled=$((n * width / total))
  pct=$((n * 100 / total))
  printf '\r\033[2K  %-24s [%s%s] %3d%% %d/%d packages, %s' "$tag" \
    "$(printf '%*s' "$filled" '' | tr ' ' '#')" "$(printf '%*s' "$((width - filled))" '' | tr ' ' '.')" \
    "$pct" "$n" "$total" "$(duration $((SECONDS - start)))"
}

start=$SECONDS
echo "$tag: resolving the packages of $pkg (downloads the pinned modules the first time)"
total="$("$go" list -deps "$@" "$pkg" | wc -l)"
echo "$tag: building $pkg ($total packages)"
# go build -v names each package as it compiles it (cached ones are not
# named): that is the progress. Every other line is kept for an error.
compiled=0 last=$SECONDS status=""
other=()
# read -t keeps what it read of a line when it times out (a loaded
# machine can pause go mid-line): that part is kept in partial and the
# rest of the line appended to it, or "__exit 0" would be read as "_"
# and "_exit 0".
partial=""
while :; do
  if IFS= read -r -t 1 line; then
    line="$partial$line" partial=""
    case "$line" in
      "__exit "*) status="${line#__exit }"; break ;;
      *[[:space:]]* | "#"* | "") other+=("$line") ;;
      *) compiled=$((compiled + 1)) ;;
    esac
  elif [ $? -le 128 ]; then
    break # end of input
  else
    partial+="$line"
  fi
  if [ "$tty" = 1 ]; then
    bar "$compiled" "$total" "$start"
  elif ((SECONDS - last >= every)); then
    echo "$tag: still building, $(duration $((SECONDS - start))) so far; $compiled of its $total packages compiled (cached ones are not counted)"
    last=$SECONDS
  fi
done < <( ("$go" build -v "$@" -o "$out" "$pkg" 2>&1) && echo "__exit 0" || echo "__exit $?")
if [ "$tty" = 1 ]; then printf '\r\033[2K'; fi
if [ -z "$status" ]; then
  other+=("(go build ended without saying how)")
  status=1
fi
if [ "$status" != 0 ]; then
  if [ ${#other[@]} -gt 0 ]; then printf '%s\n' "${other[@]}" >&2; fi
  echo "$tag: go build failed (exit $status) after $(duration $((SECONDS - start)))" >&2
  exit "$status"
fi
echo "$tag: built in $(duration $((SECONDS - start))) ($compiled packages compiled, the rest from Go's build cache)"
