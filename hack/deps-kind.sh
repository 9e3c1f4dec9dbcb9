#!/usr/bin/env bash
# 'make deps-kind' (root, Debian/Ubuntu): what 'make kind-image' and
# 'make e2e-kind' need.
#  - a container engine: Debian's docker.io, started by hand where no init
#    system runs it (log: /var/log/bootproof-dockerd.log);
#  - debootstrap (the node image's Debian base), gcc and libseccomp-dev
#    (runc and pause are built statically);
#  - only on a host whose root cannot grant every capability the kernel
#    knows (docker run --privileged then fails with "unable to apply caps:
#    operation not permitted"): the narrow runtime shim
#    /usr/local/libexec/bootproof/runc-shim, registered in
#    /etc/docker/daemon.json as docker's default runtime. It removes from a
#    container's capability sets only the capabilities this host lacks, then
#    runs the real runc (harness/kindhost). On any other host nothing is
#    registered.
# Running it again changes nothing that is already in place.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { echo "deps-kind: $*"; }

if [ "$(id -u)" != 0 ]; then echo "deps-kind: run as root (it installs packages and configures docker)" >&2; exit 2; fi

pkgs=(debootstrap gcc libc6-dev libseccomp-dev tar)
command -v dockerd >/dev/null 2>&1 || command -v podman >/dev/null 2>&1 || pkgs+=(docker.io)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

has_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }
docker_up() { docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }
start_docker() {
  if has_systemd; then systemctl start docker; else
    setsid dockerd >>/var/log/bootproof-dockerd.log 2>&1 < /dev/null &
  fi
  for _ in $(seq 60); do docker_up && return 0; sleep 0.5; done
  echo "deps-kind: dockerd did not answer within 30s; its log: /var/log/bootproof-dockerd.log" >&2
  tail -n 20 /var/log/bootproof-dockerd.log >&2 || true
  exit 2
}
stop_docker() {
  if has_systemd; then systemctl stop docker; return; fi
  pkill -x dockerd || true
  for _ in $(seq 60); do pgrep -x dockerd >/dev/null || return 0; sleep 0.5; done
  echo "deps-kind: dockerd did not stop" >&2; exit 2
}
command -v docker >/dev/null 2>&1 || { log "podman is installed and docker is not; kind will use podman (not tried on this machine)"; exit 0; }
docker_up || { log "starting dockerd"; start_docker; }

# Does this host's root hold every capability the kernel knows?
last="$(cat /proc/sys/kernel/cap_last_cap)"
bnd="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
full=$(( (1 << (last + 1)) - 1 ))
shim=/usr/local/libexec/bootproof/runc-shim
if (( (16#$bnd & full) == full )); then
  log "docker $(docker info --format '{{.ServerVersion}}') is running; this host grants every capability, no runtime shim needed"
  exit 0
fi
log "this host's root lacks capabilities (CapBnd $bnd, kernel's last $last): installing the runtime shim $shim"
mkdir -p "$(dirname "$shim")"
CGO_ENABLED=0 go build -trimpath -o "$shim.new" ./cmd/bootproof-runc-shim
if ! cmp -s "$shim.new" "$shim" 2>/dev/null; then mv "$shim.new" "$shim"; else rm -f "$shim.new"; fi
# The runc the shim wraps, fixed now (the shim never looks it up on PATH).
runc_path="$(command -v runc || true)"
if [ -z "$runc_path" ] || [ "$(readlink -f "$runc_path")" = "$(readlink -f "$shim")" ]; then
  echo "deps-kind: no runc on PATH for the shim to wrap (docker.io installs /usr/sbin/runc)" >&2; exit 2
fi
printf '%s\n' "$(readlink -f "$runc_path")" > "$shim.runc.new" && chmod 0644 "$shim.runc.new" && mv "$shim.runc.new" "$shim.runc"

want='{
  "runtimes": {"bootproof-runc": {"path": "'"$shim"'"}},
  "default-runtime": "bootproof-runc"
}'
conf=/etc/docker/daemon.json
if [ -f "$conf" ] && [ "$(cat "$conf")" = "$want" ]; then
  log "$conf already registers the shim"
elif [ -s "$conf" ] && [ "$(tr -d ' \n\t' < "$conf")" != "{}" ]; then
  echo "deps-kind: $conf has settings of its own, which this script does not merge; add to it:" >&2
  echo '  "runtimes": {"bootproof-runc": {"path": "'"$shim"'"}}, "default-runtime": "bootproof-runc"' >&2
  echo "then restart dockerd and run 'make deps-kind' again." >&2
  exit 2
else
  mkdir -p /etc/docker
  printf '%s\n' "$want" > "$conf"
  log "registered the shim in $conf; restarting dockerd"
  stop_docker
  start_docker
fi
if [ "$(docker info --format '{{.DefaultRuntime}}')" != bootproof-runc ]; then
  log "restarting dockerd to take the shim as its default runtime"
  stop_docker
  start_docker
fi

# Probe: a privileged container whose only file is the shim itself.
# Tagged by the shim's hash: a new shim gets a new probe (older probes go).
probe="bootproof-privileged-probe:$(sha256sum "$shim" | cut -c1-12)"
if ! docker image inspect "$probe" >/dev/null 2>&1; then
  docker image ls --format '{{.Repository}}:{{.Tag}}' bootproof-privileged-probe | xargs -r docker image rm >/dev/null 2>&1 || true
  tar -C "$(dirname "$shim")" -c "$(basename "$shim")" --transform 's,.*,probe,' | docker import - "$probe" >/dev/null
fi
# It must get every capability but the ones this host's root lacks.
host_missing="$("$shim" --missing)"
if out="$(docker run --rm --privileged --network none "$probe" /probe --self-test --expect-missing "$host_missing" 2>&1)"; then
  log "a privileged container runs: $out"
else
  echo "deps-kind: a privileged container still fails with the shim: $out" >&2
  exit 2
fi
