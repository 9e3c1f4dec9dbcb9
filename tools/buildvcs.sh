#!/usr/bin/env bash
# Prints "-buildvcs=false" where 'go build' of a main package of this
# checkout could not stamp its version control information, and nothing
# where it can. Go asks git for it, and fails the build when git refuses:
# root building in a checkout another user owns ("detected dubious
# ownership", git's safe.directory), or a checkout where git is not
# installed. The Makefile and the scripts that build ./cmd/... as root
# (hack/kind-image.sh, hack/deps-kind.sh) add what this prints to GOFLAGS.
#   tools/buildvcs.sh [DIR]   (default: the current directory)
cd "${1:-.}" || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && exit 0
d="$(pwd -P)"
while :; do
  if [ -e "$d/.git" ]; then echo -buildvcs=false; exit 0; fi
  [ "$d" = / ] && exit 0
  d="$(dirname "$d")"
done
