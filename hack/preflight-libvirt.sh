#!/usr/bin/env bash
# Says exactly what 'make e2e-libvirt' lacks, and how to get it.
set -uo pipefail
problems=()
command -v qemu-system-x86_64 >/dev/null || problems+=("qemu-system-x86_64 is missing (package qemu-system-x86)")
command -v socat >/dev/null || problems+=("socat is missing (package socat): QEMU runs it to forward the guests' only connection, to the API server")
for t in apt-get apt-cache dpkg-deb depmod; do command -v "$t" >/dev/null || problems+=("$t is missing (needed to fetch and prepare the Debian kernel)"); done
[ -S /var/run/libvirt/libvirt-sock ] || problems+=("libvirtd is not reachable at /var/run/libvirt/libvirt-sock (start it: libvirtd -d; virtlogd -d)")
pgrep -x virtlogd >/dev/null || problems+=("virtlogd is not running (start it: virtlogd -d)")
if [ -c /dev/kvm ] && getent group kvm >/dev/null && [ "$(stat -c %G:%a /dev/kvm)" != kvm:660 ]; then
  problems+=("/dev/kvm is $(stat -c %U:%G\ %a /dev/kvm), not root:kvm 660: libvirt would probe QEMU's capabilities again on every call (fix: chgrp kvm /dev/kvm; chmod 0660 /dev/kvm)")
fi
if [ ${#problems[@]} -gt 0 ]; then
  echo "e2e-libvirt cannot run here:" >&2
  for p in "${problems[@]}"; do echo "  - $p" >&2; done
  echo "'make deps-libvirt' installs the packages and starts the daemons (Debian/Ubuntu, as root)." >&2
  exit 2
fi
