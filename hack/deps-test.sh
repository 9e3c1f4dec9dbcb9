#!/usr/bin/env bash
# Makes sure the host tools 'make test' needs are present: xmllint
# (Debian/Ubuntu package libxml2-utils) validates JUnit output against its
# schema. As root on Debian/Ubuntu a missing package is installed with apt;
# otherwise the script says what to install and exits 2.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
declare -A want=([xmllint]=libxml2-utils)
missing=()
for tool in "${!want[@]}"; do command -v "$tool" >/dev/null 2>&1 || missing+=("${want[$tool]}"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "make test needs: ${missing[*]} (Debian/Ubuntu packages; 'sudo apt-get install ${missing[*]}', or run make as root on Debian/Ubuntu and it installs them)" >&2
  exit 2
fi
echo "deps-test: installing ${missing[*]} with apt-get"
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
