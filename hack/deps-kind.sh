#!/usr/bin/env bash
# 'make deps-kind' (root, Debian/Ubuntu): what 'make kind-image' and
# 'make e2e-kind' need; 'make deps-kind-uninstall' (--uninstall) undoes it.
#  - a container engine: Debian's docker.io, started by hand where no init
#    system runs it (log: /var/log/bootproof-dockerd.log, the previous one
#    kept as .1);
#  - debootstrap and debian-archive-keyring (the node image's Debian base,
#    its signatures checked), gcc and libseccomp-dev (runc and pause are
#    built statically);
#  - only on a host whose root cannot grant every capability the kernel
#    knows (docker run --privileged then fails with "unable to apply caps:
#    operation not permitted"): the narrow runtime shim
#    /usr/local/libexec/bootproof/runc-shim, registered in
#    /etc/docker/daemon.json as docker's default runtime: merged into the
#    file (every other key kept; a different "default-runtime" or runtime
#    of the same name is refused, naming it). It removes from a fully
#    privileged container's capability sets only the capabilities this host
#    lacks, then runs the real runc (internal/kindhost). On any other host
#    nothing is registered. Whether dockerd must restart is decided by what
#    the running dockerd reports (docker info), not by the file.
#
# What it found and what it did is recorded in /var/lib/bootproof/deps-kind
# (root only):
#   daemon.json.orig    daemon.json as found (cp -p: bytes, mode, owner), or
#   daemon.json.absent  there was none;     etc-docker.created  nor /etc/docker
#   packages            the apt packages it added (with their dependencies)
#   docker.before       running|stopped: dockerd before the first install
#   dockerd.{pid,start,cmdline}  the dockerd it started by hand: its PID,
#                       start time and command line (a recycled PID is not it)
#   docker.unit-started it started docker.service (systemd hosts)
#   dirs.created        directories it created
# It only ever stops the dockerd it started, by that PID (or docker.service
# if it started the unit). When the running dockerd must restart to take
# the shim and it is not one it started, it stops with exit 2 and says what
# to run: daemon.json is left merged (its backup in place), so restarting
# dockerd the way it was started and running it again finishes the job. If
# dockerd does not come up after daemon.json changed, the file is put back
# as it was, dockerd started again, and it exits 2 with the tail of
# dockerd's log. Running it again changes nothing that is already in place,
# and keeps the first backup (the host as found).
#
# --uninstall [--keep-packages]: daemon.json back as found (removed if there
# was none; /etc/docker removed if it created it), the probe images, the
# shim and its directory removed, the dockerd it started restarted (or
# stopped, if none ran before), the packages it added removed (kept with
# --keep-packages, or when removing them would remove something installed
# since), the record removed. A dockerd it did not start that still runs
# the shim is left running: it says to restart it and run --uninstall again
# (the shim stays until then: containers it started need it to stop).
# Without an install recorded it changes nothing (an earlier deps-kind's
# shim, installed without a record, is removed with its registration).
#
# For its tests (internal/kindhost/depskind_test.go, fake commands on PATH):
# BOOTPROOF_DEPS_ROOT prefixes every host path above (and then root is not
# required), BOOTPROOF_DEPS_PROC replaces /proc where the capabilities are
# read, BOOTPROOF_SHIM_BINARY is a shim to install instead of building one.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { echo "deps-kind: $*"; }
err() { echo "deps-kind: $*" >&2; }
die() { err "$@"; exit 2; }

usage="usage: hack/deps-kind.sh [--uninstall [--keep-packages]]"
mode=install keep_packages=0
for a in "$@"; do
  case "$a" in
    --uninstall) mode=uninstall ;;
    --keep-packages) keep_packages=1 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) die "unknown argument '$a'; $usage" ;;
  esac
done
[ "$keep_packages" = 0 ] || [ "$mode" = uninstall ] || die "--keep-packages goes with --uninstall; $usage"

root="${BOOTPROOF_DEPS_ROOT:-}"
proc="${BOOTPROOF_DEPS_PROC:-/proc}"
conf_dir="$root/etc/docker"
conf="$conf_dir/daemon.json"
state="$root/var/lib/bootproof/deps-kind"
shim_dir="$root/usr/local/libexec/bootproof"
shim="$shim_dir/runc-shim"
dlog="$root/var/log/bootproof-dockerd.log"
probe_repo=bootproof-privileged-probe

if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then die "run as root (it installs packages and configures docker)"; fi
# Its scratch files, out of the host's directories (a second run changes nothing there).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
[ ! -L "$conf" ] || die "$conf is a symbolic link, which this script does not replace; make it a file (or register the shim by hand) and run it again"

# --- the record -------------------------------------------------------------

# mkdirs DIR: mkdir -p, recording in dirs.created each directory it makes.
mkdirs() {
  local d="$1" made=()
  while [ ! -d "$d" ]; do made=("$d" ${made[@]+"${made[@]}"}); d="$(dirname "$d")"; done
  for d in ${made[@]+"${made[@]}"}; do
    mkdir "$d"
    if [ -d "$state" ] && [ "$d" != "$state" ]; then echo "$d" >> "$state/dirs.created"; fi
  done
  if [ ${#made[@]} -gt 0 ] && [ "$1" = "$state" ]; then
    chmod 0700 "$state"
    printf '%s\n' "${made[@]}" | grep -vxF "$state" > "$state/dirs.created" || true
  fi
}

# --- dockerd ----------------------------------------------------------------

has_systemd() { [ -d "$root/run/systemd/system" ] && command -v systemctl >/dev/null 2>&1; }
docker_up() { docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }
# The running dockerd's own view (not daemon.json's text): "DEFAULT SHIMPATH",
# SHIMPATH being the path of its runtime bootproof-runc ("" if it has none).
effective() { docker info --format '{{.DefaultRuntime}} {{(index .Runtimes "bootproof-runc").Path}}' 2>/dev/null; }
shim_effective() { [ "$(effective)" = "bootproof-runc $shim" ]; }
shim_known() { local e; e="$(effective)" && [ "$e" != "${e%% *} " ]; }

# The start time of a live (not zombie) process, from /proc/PID/stat.
proc_start() {
  local s f
  s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  read -r -a f <<< "${s##*) }"
  [ "${f[0]}" != Z ] || return 1
  echo "${f[19]}"
}
# The PID of the dockerd this script started, if that very process still
# runs: same PID, start time and command line as recorded.
our_dockerd() {
  local pid start
  pid="$(cat "$state/dockerd.pid" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  start="$(proc_start "$pid")" || return 1
  [ "$start" = "$(cat "$state/dockerd.start" 2>/dev/null)" ] || return 1
  [ "$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)" = "$(cat "$state/dockerd.cmdline" 2>/dev/null)" ] || return 1
  echo "$pid"
}
our_unit() { has_systemd && [ -f "$state/docker.unit-started" ]; }

# wait_up [PID]: until docker answers (30s), or PID is gone.
wait_up() {
  for _ in $(seq 300); do
    docker_up && return 0
    if [ -n "${1:-}" ] && ! proc_start "$1" >/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

start_dockerd() {
  local pid="" i
  mkdirs "$(dirname "$dlog")"
  if [ -s "$dlog" ]; then mv -f "$dlog" "$dlog.1"; fi
  rm -f "$state/dockerd.pid" "$state/dockerd.start" "$state/dockerd.cmdline" "$state/dockerd.pid.new"
  log "starting dockerd (log: $dlog)"
  # shellcheck disable=SC2016 # $$ is the inner shell's PID, which becomes dockerd's
  setsid bash -c 'echo $$ > "$0"; exec dockerd' "$state/dockerd.pid.new" >> "$dlog" 2>&1 < /dev/null &
  for i in $(seq 50); do
    pid="$(cat "$state/dockerd.pid.new" 2>/dev/null || true)"
    [ -z "$pid" ] || break
    sleep 0.1
  done
  [ -n "$pid" ] || { err "dockerd did not start"; return 1; }
  if ! wait_up "$pid"; then
    if proc_start "$pid" >/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
    rm -f "$state/dockerd.pid.new"
    return 1
  fi
  proc_start "$pid" > "$state/dockerd.start"
  tr '\0' ' ' < "/proc/$pid/cmdline" > "$state/dockerd.cmdline"
  mv -f "$state/dockerd.pid.new" "$state/dockerd.pid"
}
stop_dockerd() {  # PID: the dockerd this script started (our_dockerd)
  local pid="$1" start
  start="$(cat "$state/dockerd.start")"
  log "stopping the dockerd this script started (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 300); do
    if [ "$(proc_start "$pid" || true)" != "$start" ]; then
      rm -f "$state/dockerd.pid" "$state/dockerd.start" "$state/dockerd.cmdline"
      return 0
    fi
    sleep 0.1
  done
  die "dockerd (pid $pid) did not stop within 30s; its log: $dlog"
}
start_docker() {
  if has_systemd; then
    log "starting docker.service"
    systemctl start docker || return 1
    touch "$state/docker.unit-started"
    wait_up
  else
    start_dockerd
  fi
}
# restart_docker: 0 restarted, 1 it did not come back, 3 not a dockerd this
# script started (it does nothing then).
restart_docker() {
  local pid
  if pid="$(our_dockerd)"; then
    stop_dockerd "$pid"
    start_dockerd || return 1
  elif our_unit; then
    log "restarting docker.service (this script started it)"
    systemctl restart docker || return 1
    wait_up || return 1
  else
    return 3
  fi
}
docker_log_tail() {
  if our_unit; then
    err "dockerd's log (journalctl -u docker) ends:"; journalctl -u docker -n 20 --no-pager >&2 || true
  else
    err "dockerd's log ($dlog) ends:"; tail -n 20 "$dlog" >&2 || true
  fi
}
how_to_restart() {
  if has_systemd; then echo "systemctl restart docker, which stops its running containers"
  else echo "service docker restart, your docker-in-docker entrypoint, or however it was started"; fi
}

# --- daemon.json ------------------------------------------------------------

# The shim of this checkout (BOOTPROOF_SHIM_BINARY, or built): what is
# installed, and what changes daemon.json (--daemon-config-{merge,unmerge};
# an installed shim may be an older one, without them).
shim_tool() {
  if [ -n "${BOOTPROOF_SHIM_BINARY:-}" ]; then echo "$BOOTPROOF_SHIM_BINARY"; return; fi
  if [ ! -x "$scratch/shim" ]; then
    CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$scratch/shim" ./cmd/bootproof-runc-shim >&2 || return 1
  fi
  echo "$scratch/shim"
}
# write_conf FILE: daemon.json gets FILE's bytes, keeping its mode and owner
# (a new one is 0644), replaced atomically.
write_conf() {
  local tmp="$conf_dir/.daemon.json.deps-kind"
  mkdirs "$conf_dir"
  rm -f "$tmp"
  if [ -e "$conf" ]; then cp -p "$conf" "$tmp" && cat "$1" > "$tmp"; else install -m 0644 "$1" "$tmp"; fi
  mv -f "$tmp" "$conf"
}
# restore_conf COPY: daemon.json back to COPY, made with cp -p: its bytes,
# mode and owner.
restore_conf() {
  local tmp="$conf_dir/.daemon.json.deps-kind"
  mkdirs "$conf_dir"
  rm -f "$tmp"
  cp -p "$1" "$tmp"
  mv -f "$tmp" "$conf"
}
same_file() { cmp -s "$1" "$2" && [ "$(stat -c '%a %u %g' "$1")" = "$(stat -c '%a %u %g' "$2")" ]; }
# The first time the file is about to change: keep it as found. One that
# registers the shim already (an earlier deps-kind wrote it, without a
# record) is kept without the shim's keys.
backup_conf() {
  [ ! -e "$state/daemon.json.orig" ] && [ ! -e "$state/daemon.json.absent" ] || return 0
  if [ ! -e "$conf" ]; then touch "$state/daemon.json.absent"; return; fi
  local tool; tool="$(shim_tool)" || die "cannot build the runtime shim (go build ./cmd/bootproof-runc-shim)"
  cp -p "$conf" "$scratch/orig"
  "$tool" --daemon-config-unmerge "$conf" "$shim" > "$scratch/unmerged" || exit 2
  if ! cmp -s "$scratch/unmerged" "$conf"; then
    log "$conf registers the shim already (an earlier deps-kind, without a record): it is kept as found without the shim's keys"
    if [ "$(tr -d ' \n\t' < "$scratch/unmerged")" = "{}" ]; then
      touch "$state/daemon.json.absent"; return
    fi
    cat "$scratch/unmerged" > "$scratch/orig"
  fi
  cp -p "$scratch/orig" "$state/daemon.json.orig.new"
  mv "$state/daemon.json.orig.new" "$state/daemon.json.orig"
}

# --- install ----------------------------------------------------------------

installed_packages() { dpkg-query -W -f '${db:Status-Abbrev}${binary:Package}\n' 2>/dev/null | awk '$1 == "ii" {print $2}' | sort -u; }

install_packages() {
  local pkgs=(debootstrap debian-archive-keyring gcc libc6-dev libseccomp-dev tar) missing=() p before names
  command -v dockerd >/dev/null 2>&1 || command -v podman >/dev/null 2>&1 || pkgs+=(docker.io)
  before="$(installed_packages)"
  # (dpkg names a Multi-Arch: same package with its ':arch')
  names="$(cut -d: -f1 <<< "$before")"
  for p in "${pkgs[@]}"; do grep -qxF "$p" <<< "$names" || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Everything that came with them is recorded, for the uninstall.
  comm -13 <(echo "$before") <(installed_packages) >> "$state/packages"
  sort -u -o "$state/packages" "$state/packages"
}

install_shim() {
  local bin runc_path
  bin="$(shim_tool)" || die "cannot build the runtime shim (go build ./cmd/bootproof-runc-shim)"
  mkdirs "$shim_dir"
  if ! cmp -s "$bin" "$shim"; then
    install -m 0755 "$bin" "$shim.new" && mv "$shim.new" "$shim"
  fi
  # The runc the shim wraps, fixed now (the shim never looks it up on PATH).
  runc_path="$(command -v runc || true)"
  if [ -z "$runc_path" ] || [ "$(readlink -f "$runc_path")" = "$(readlink -f "$shim")" ]; then
    die "no runc on PATH for the shim to wrap (docker.io installs /usr/sbin/runc)"
  fi
  if [ "$(cat "$shim.runc" 2>/dev/null || true)" != "$(readlink -f "$runc_path")" ]; then
    printf '%s\n' "$(readlink -f "$runc_path")" > "$shim.runc.new" && chmod 0644 "$shim.runc.new" && mv "$shim.runc.new" "$shim.runc"
  fi
}

# rollback WHY: dockerd did not come up with the daemon.json just written.
rollback() {
  err "$1"
  docker_log_tail
  if [ -e "$scratch/prev" ]; then restore_conf "$scratch/prev"; else rm -f "$conf"; fi
  err "$conf is back as it was before this run; starting dockerd again"
  if start_docker; then err "dockerd runs again, without the shim"
  else err "dockerd does not start with the configuration as it was either"; docker_log_tail; fi
  die "the shim is not registered; 'make deps-kind-uninstall' removes what this run installed"
}

do_install() {
  local first=0 changed=0
  if [ ! -d "$state" ]; then
    first=1
    mkdirs "$state"
    if docker_up; then echo running > "$state/docker.before"; else echo stopped > "$state/docker.before"; fi
    [ -d "$conf_dir" ] || touch "$state/etc-docker.created"
  fi
  install_packages
  if [ "$first" = 1 ] && [ "$(cat "$state/docker.before")" = stopped ] && has_systemd && docker_up; then
    touch "$state/docker.unit-started"  # installing docker.io started it
  fi
  command -v docker >/dev/null 2>&1 || { log "podman is installed and docker is not; kind will use podman (not tried on this machine)"; exit 0; }

  # Does this host's root hold every capability the kernel knows?
  local last bnd full
  last="$(cat "$proc/sys/kernel/cap_last_cap")"
  bnd="$(awk '/^CapBnd:/ {print $2}' "$proc/self/status")"
  full=$(( (1 << (last + 1)) - 1 ))
  if (( (16#$bnd & full) == full )); then
    if ! docker_up; then start_docker || { docker_log_tail; die "dockerd did not answer within 30s"; }; fi
    log "docker $(docker info --format '{{.ServerVersion}}') is running; this host grants every capability, no runtime shim needed"
    return 0
  fi
  log "this host's root lacks capabilities (CapBnd $bnd, kernel's last $last): the runtime shim $shim"
  install_shim
  backup_conf
  "$shim" --daemon-config-merge "$conf" "$shim" > "$scratch/merged" || exit 2
  if [ -e "$conf" ] && cmp -s "$scratch/merged" "$conf"; then
    log "$conf registers the shim already"
  else
    [ ! -e "$conf" ] || cp -p "$conf" "$scratch/prev"
    write_conf "$scratch/merged"
    changed=1
    if [ -e "$state/daemon.json.orig" ]; then log "registered the shim in $conf (as found: $state/daemon.json.orig)"
    else log "registered the shim in $conf (there was none)"; fi
  fi

  if ! docker_up; then
    start_docker || { [ "$changed" = 0 ] || rollback "dockerd did not come up with the shim registered"; docker_log_tail; die "dockerd did not answer within 30s"; }
  elif shim_effective; then
    log "dockerd runs the shim as its default runtime already"
  else
    local rc=0
    log "dockerd must restart to take the shim as its default runtime"
    restart_docker || rc=$?
    case "$rc" in
      0) ;;
      3)
        err "the running dockerd was not started by this script, which does not stop it (nor its containers)."
        if [ -e "$state/daemon.json.orig" ]; then err "$conf registers the shim now (the file as found is kept as $state/daemon.json.orig; 'make deps-kind-uninstall' puts it back)."
        else err "$conf registers the shim now (there was none; 'make deps-kind-uninstall' removes it)."; fi
        die "restart dockerd the way it was started ($(how_to_restart)), then run 'make deps-kind' again"
        ;;
      *) if [ "$changed" = 1 ]; then rollback "dockerd did not come back with the shim registered"; fi
         docker_log_tail; die "dockerd did not come back after a restart" ;;
    esac
  fi
  if ! shim_effective; then
    die "dockerd runs, but reports '$(effective)' as its default runtime and the shim's path, not 'bootproof-runc $shim' ($conf: $(tr -d '\n' < "$conf"))"
  fi

  # Probe: a privileged container whose only file is the shim itself.
  # Tagged by the shim's hash: a new shim gets a new probe (older probes go).
  local probe host_missing out
  probe="$probe_repo:$(sha256sum "$shim" | cut -c1-12)"
  if ! docker image inspect "$probe" >/dev/null 2>&1; then
    docker image ls --format '{{.Repository}}:{{.Tag}}' "$probe_repo" | xargs -r docker image rm >/dev/null 2>&1 || true
    tar -C "$(dirname "$shim")" -c "$(basename "$shim")" --transform 's,.*,probe,' | docker import - "$probe" >/dev/null
  fi
  # It must get every capability but the ones this host's root lacks.
  host_missing="$("$shim" --missing)"
  if out="$(docker run --rm --privileged --network none "$probe" /probe --self-test --expect-missing "$host_missing" 2>&1)"; then
    log "a privileged container runs: $out"
  else
    die "a privileged container still fails with the shim: $out"
  fi
}

# --- uninstall --------------------------------------------------------------

remove_packages() {
  local recorded=() present=() p sim extra
  [ -s "$state/packages" ] || { log "no apt package to remove (it installed none)"; return 0; }
  mapfile -t recorded < "$state/packages"
  if [ "$keep_packages" = 1 ]; then log "keeping the packages it installed (--keep-packages): ${recorded[*]}"; return 0; fi
  local now; now="$(installed_packages)"
  for p in "${recorded[@]}"; do grep -qxF "$p" <<< "$now" && present+=("$p"); done
  [ ${#present[@]} -gt 0 ] || { log "the packages it installed are gone already"; return 0; }
  sim="$(apt-get -s remove "${present[@]}" 2>&1)" || { err "apt-get -s remove ${present[*]} failed: $sim"; die "the packages it installed are left (remove them by hand, or run it again with --keep-packages)"; }
  # (names compared without their ':arch')
  extra="$(awk '$1 == "Remv" {sub(/:.*/, "", $2); print $2}' <<< "$sim" | grep -vxF -f <(sed 's/:.*//' "$state/packages") || true)"
  if [ -n "$extra" ]; then
    log "keeping the packages it installed (${present[*]}): removing them would also remove $(paste -sd ' ' <<< "$extra") (installed since)"
    return 0
  fi
  log "removing the packages it installed: ${present[*]}"
  apt-get remove -y -qq "${present[@]}" >/dev/null
}

do_uninstall() {
  if [ ! -d "$state" ]; then
    if [ -e "$shim" ]; then
      log "no install recorded in $state, but a runtime shim of an earlier deps-kind is here: removing it"
      mkdirs "$state"
      backup_conf
    else
      log "nothing to undo: no install recorded in $state"
      return 0
    fi
  fi
  # daemon.json as found. Changes made to it since the install go too: said.
  local found="$scratch/none"
  [ ! -e "$state/daemon.json.orig" ] || found="$state/daemon.json.orig"
  if [ -e "$conf" ] && [ -x "$shim" ] && "$shim" --daemon-config-merge "$found" "$shim" > "$scratch/expected" 2>/dev/null &&
    ! cmp -s "$scratch/expected" "$conf" && ! cmp -s "$found" "$conf"; then
    log "$conf was changed since the install; putting it back as found drops those changes. It held:"
    cat "$conf"
  fi
  if [ -e "$state/daemon.json.orig" ]; then
    if [ -e "$conf" ] && same_file "$state/daemon.json.orig" "$conf"; then log "$conf is as found"
    else restore_conf "$state/daemon.json.orig"; log "restored $conf as found"; fi
  elif [ -e "$state/daemon.json.absent" ]; then
    if [ -e "$conf" ]; then rm -f "$conf"; log "removed $conf (there was none)"; fi
  else
    log "$conf was never changed"
  fi
  # The probe images.
  if docker_up; then
    local imgs
    imgs="$(docker image ls --format '{{.Repository}}:{{.Tag}}' "$probe_repo")"
    if [ -n "$imgs" ]; then
      xargs docker image rm >/dev/null <<< "$imgs"
      log "removed the probe images: $(paste -sd ' ' <<< "$imgs")"
    fi
  elif [ -e "$shim" ]; then
    log "docker is not running: its probe images ($probe_repo:*), if any, stay"
  fi
  # dockerd: back to how it was found, and out of the shim's hands.
  local pid before
  before="$(cat "$state/docker.before" 2>/dev/null || echo running)"
  if pid="$(our_dockerd)"; then
    if [ "$before" = stopped ]; then stop_dockerd "$pid"
    elif shim_known; then
      log "restarting the dockerd this script started, without the shim"
      stop_dockerd "$pid"
      start_dockerd || { docker_log_tail; die "dockerd did not come back after the restart (the shim is still installed)"; }
    fi
  elif our_unit && docker_up; then
    if [ "$before" = stopped ]; then log "stopping docker.service (this script started it)"; systemctl stop docker
    elif shim_known; then
      log "restarting docker.service (this script started it), without the shim"
      if ! systemctl restart docker || ! wait_up; then
        docker_log_tail; die "docker.service did not come back after the restart (the shim is still installed)"
      fi
    fi
  elif docker_up && shim_known; then
    err "the running dockerd still has the shim, and it was not started by this script, which does not stop it (nor its containers)."
    err "$conf is restored; the shim stays installed until dockerd no longer uses it (the containers it started need it to stop)."
    die "restart dockerd the way it was started ($(how_to_restart)), then run 'make deps-kind-uninstall' again"
  fi
  # The shim.
  if [ -e "$shim" ] || [ -e "$shim.runc" ]; then
    rm -f "$shim" "$shim.runc" "$shim.new" "$shim.runc.new"
    log "removed the runtime shim $shim"
  fi
  rmdir "$shim_dir" 2>/dev/null || true
  remove_packages
  if [ -f "$state/etc-docker.created" ] && [ -d "$conf_dir" ]; then
    rm -rf "$conf_dir"; log "removed $conf_dir (there was none)"
  fi
  if ! our_dockerd >/dev/null; then rm -f "$dlog" "$dlog.1"; fi
  local dirs=()
  [ ! -f "$state/dirs.created" ] || mapfile -t dirs < "$state/dirs.created"
  rm -rf "$state"
  local i
  for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do rmdir "${dirs[i]}" 2>/dev/null || true; done
  log "uninstalled: the record $state is removed"
}

"do_$mode"
