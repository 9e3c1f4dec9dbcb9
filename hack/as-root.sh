#!/usr/bin/env bash
# Root for the CI steps that need it (packages, libvirt's system
# connection), on GitHub's hosted runners and on a self-hosted runner alike
# (docs/ci.md):
#
#   hack/as-root.sh COMMAND [ARG...]   run COMMAND as root: directly when this
#                                      is root, else with passwordless sudo,
#                                      keeping the environment and PATH (Go
#                                      from setup-go)
#   hack/as-root.sh --give-back PATH... give PATH (recursively) back to this
#                                      user, after root wrote into it: a
#                                      self-hosted runner's next checkout must
#                                      be able to clean the workspace
set -euo pipefail

if [ "${1:-}" = --give-back ]; then
  shift
  [ "$(id -u)" -eq 0 ] && exit 0 # root wrote as root: nothing to give back
  paths=()
  for p in "$@"; do if [ -e "$p" ]; then paths+=("$p"); fi; done
  [ ${#paths[@]} -eq 0 ] && exit 0
  exec sudo chown -R "$(id -u):$(id -g)" "${paths[@]}"
fi

if [ $# -eq 0 ]; then
  echo "usage: hack/as-root.sh COMMAND [ARG...] | --give-back PATH..." >&2
  exit 2
fi
if [ "$(id -u)" -eq 0 ]; then
  exec "$@"
fi
if ! sudo -n true 2>/dev/null; then
  echo "hack/as-root.sh: $1 needs root: run the runner as root or give its user passwordless sudo (docs/ci.md)" >&2
  exit 2
fi
exec sudo -E env "PATH=$PATH" "$@"
