#!/usr/bin/env bash
# The shell logic of the reusable GitHub Action (action.yml at the
# repository root), kept here so it can be tested outside GitHub
# (harness/action_test.go).
#
#   hack/action.sh cache-key   key=... of the control-plane binaries, to $GITHUB_OUTPUT
#   hack/action.sh install     bin/bootproof (built from this checkout, or BOOTPROOF_BINARY),
#                              and the control-plane binaries for the embedded cluster
#   hack/action.sh run         bootproof run; exit-code, report-dir and junit to $GITHUB_OUTPUT;
#                              a note in $GITHUB_STEP_SUMMARY when no report was written
#
# Inputs come from the environment (action.yml maps its inputs to them):
#   SUBJECT_FILE     the subject file (required for run)
#   CLUSTER          embedded (default), kind or kubeconfig
#   KUBECONFIG_PATH  with kubeconfig: the kubeconfig (default $KUBECONFIG)
#   GRACE_PERIOD     the cluster's node-monitor-grace-period (needed with kubeconfig
#                    unless bootproof can read it from a kubeadm-style cluster)
#   RUN_ARGS         more 'bootproof run' arguments, split on white space
#   REPORT_DIR       report directory (default bootproof-report; new or empty)
#   BOOTPROOF_BINARY a bootproof binary to install instead of building one
#   BIN_DIR          where bootproof and the control-plane binaries go (default bin/ here)
# GITHUB_OUTPUT and GITHUB_STEP_SUMMARY are GitHub's files (written when set).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BIN_DIR:-$root/bin}"
cluster="${CLUSTER:-embedded}"
report_dir="${REPORT_DIR:-bootproof-report}"

fail() {
  echo "bootproof action: $*" >&2
  exit 2
}

# output KEY VALUE: a step output, when GitHub collects them.
output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1=$2" >>"$GITHUB_OUTPUT"; fi
}

# summary TEXT: a paragraph of the job summary, when GitHub shows one.
summary() {
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then printf '%s\n\n' "$1" >>"$GITHUB_STEP_SUMMARY"; fi
}

check_cluster() {
  case "$cluster" in
    embedded | kind | kubeconfig) ;;
    *) fail "cluster \"$cluster\": accepted: embedded, kind, kubeconfig" ;;
  esac
}

cache_key() {
  local sum
  sum="$(cat "$root"/tools/controlplane/*/go.mod "$root"/tools/controlplane/*/go.sum "$root"/harness/controlplane/cpbuild/*.go | sha256sum | cut -c1-32)"
  output key "bootproof-controlplane-$(uname -s)-$(uname -m)-$sum"
}

install() {
  check_cluster
  mkdir -p "$bin"
  if [ -n "${BOOTPROOF_BINARY:-}" ]; then
    [ -x "$BOOTPROOF_BINARY" ] || fail "bootproof-binary $BOOTPROOF_BINARY: not an executable file"
    local from
    from="$(cd "$(dirname "$BOOTPROOF_BINARY")" && pwd)/$(basename "$BOOTPROOF_BINARY")"
    if [ "$from" != "$bin/bootproof" ]; then cp "$from" "$bin/bootproof"; fi
    echo "bootproof action: installed $BOOTPROOF_BINARY as $bin/bootproof"
  else
    echo "bootproof action: building bootproof from $root"
    (cd "$root" && go build -o "$bin/bootproof" ./cmd/bootproof)
  fi
  if [ "$cluster" = embedded ]; then
    "$bin/bootproof" controlplane build --dir "$bin"
  fi
}

run() {
  check_cluster
  [ -n "${SUBJECT_FILE:-}" ] || fail "subject-file is required: the YAML file that describes your operator (see examples/subjects/)"
  [ -f "$SUBJECT_FILE" ] || fail "subject-file $SUBJECT_FILE: no such file (paths are relative to the workspace, $PWD)"
  [ -x "$bin/bootproof" ] || fail "$bin/bootproof is missing: run 'hack/action.sh install' first"
  local -a args=(run --cluster "$cluster" --subject-file "$SUBJECT_FILE" --report-dir "$report_dir")
  case "$cluster" in
    embedded) args+=(--bin-dir "$bin") ;;
    kubeconfig)
      local kc="${KUBECONFIG_PATH:-${KUBECONFIG:-}}"
      [ -n "$kc" ] || fail "cluster kubeconfig needs kubeconfig (or \$KUBECONFIG): the cluster your operator runs in"
      args+=(--kubeconfig "$kc")
      ;;
  esac
  if [ -n "${GRACE_PERIOD:-}" ]; then args+=(--grace-period "$GRACE_PERIOD"); fi
  local -a extra=()
  if [ -n "${RUN_ARGS:-}" ]; then read -r -a extra <<<"$RUN_ARGS"; fi
  args+=("${extra[@]}")
  echo "bootproof action: bootproof ${args[*]}"
  local code=0
  "$bin/bootproof" "${args[@]}" || code=$?
  output exit-code "$code"
  output report-dir "$report_dir"
  output junit "$report_dir/junit.xml"
  # bootproof appends its summary to $GITHUB_STEP_SUMMARY itself; without a
  # report it could not, so say why here.
  if [ ! -f "$report_dir/summary.md" ]; then
    summary "**bootproof wrote no report** (exit $code): the run stopped before its cases; the step's log says why (a usage error or an infrastructure fault)."
  fi
  return "$code"
}

case "${1:-}" in
  cache-key) cache_key ;;
  install) install ;;
  run) run ;;
  *) fail "usage: hack/action.sh cache-key|install|run" ;;
esac
