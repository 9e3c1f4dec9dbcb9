#!/usr/bin/env bash
# Installs what 'make e2e-libvirt' needs on Debian/Ubuntu (as root) and
# starts libvirtd and virtlogd when no init system runs them.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# socat: QEMU runs it per guest connection to forward the API server (guestfwd cmd:).
pkgs=(qemu-system-x86 libvirt-daemon-system kmod socat)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "deps-libvirt: run as root to install: ${missing[*]}" >&2; exit 2; fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The kernel is fetched with apt-get download: the package lists must exist.
if ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq; else echo "deps-libvirt: no apt package lists; run 'apt-get update' as root" >&2; exit 2; fi
fi
# Without udev, /dev/kvm stays root-only: libvirt then finds its cached QEMU
# capabilities (probed as root, with KVM) outdated on every call and probes
# QEMU again and again. Give it the mode Debian's udev rule gives it.
if [ -c /dev/kvm ] && getent group kvm >/dev/null && [ "$(stat -c %G:%a /dev/kvm)" != kvm:660 ]; then
  if [ "$(id -u)" = 0 ]; then chgrp kvm /dev/kvm && chmod 0660 /dev/kvm; else echo "deps-libvirt: /dev/kvm is not root:kvm 0660; as root: chgrp kvm /dev/kvm; chmod 0660 /dev/kvm" >&2; exit 2; fi
fi
if ! pgrep -x virtlogd >/dev/null; then virtlogd -d; fi
if ! pgrep -x libvirtd >/dev/null; then libvirtd -d; fi
for _ in $(seq 50); do [ -S /var/run/libvirt/libvirt-sock ] && break; sleep 0.2; done
echo "deps-libvirt: qemu, libvirt and kmod installed; libvirtd and virtlogd running"
