#!/usr/bin/env bash
# 'make e2e-kind': the catalog on a kind cluster whose own
# kube-controller-manager judges the simulated nodes' heartbeats.
#   hack/e2e-kind.sh NODE_IMAGE PARALLEL REPORT_DIR BIN_DIR [MODE]
# NODE_IMAGE: local (built here by hack/kind-image.sh, no registry needed),
# published (kind's own, pinned by digest), or an image name.
# Subjects: bootproof's reconciler as a process
# (examples/subjects/bootproof-*.yaml) and as a Deployment built into an image
# here and loaded into the cluster (examples/subjects/bootproof-*-deployment.yaml);
# with MODE full (the default) also in-process (bootid, legacy). MODE ci
# leaves the in-process columns out: the same reconciler in-process is
# judged on the embedded cluster ('make test'), and on kind what differs is
# the process and the Deployment. The Deployment must be observed to do what
# the process does, scenario by scenario. MODE full also runs the
# calibration as Deployments ('bootproof calibrate --cluster kind
# --listed-only'). JUnit: _output/junit-kind.xml.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
choice="$1" parallel="$2" report_dir="$3" bin_dir="$4" mode="${5:-full}"
start=$SECONDS
in_process=()
case "$mode" in
  full) in_process=(--subject bootid --subject legacy) ;;
  ci) ;;
  *) echo "e2e-kind: mode $mode: accepted: full (in-process, process and Deployment columns) or ci (process and Deployment)" >&2; exit 2 ;;
esac
echo "e2e-kind: mode $mode: subject columns: ${in_process[*]:+bootid, legacy (in-process), }bootproof-bootid, bootproof-legacy (processes), bootproof-bootid-deployment, bootproof-legacy-deployment"
image_flag=()
case "$choice" in
  local)
    tag="$(hack/kind-image.sh)" || exit 2
    image_flag=(--kind-image "$tag") ;;
  published) ;;
  *) image_flag=(--kind-image "$choice") ;;
esac
"$bin_dir/bootproof" kind build-operator-image --out "$bin_dir/bootproof-operator.tar" || exit 2
"$bin_dir/bootproof" run --cluster kind --nodes fake "${image_flag[@]}" \
  --kind-load-image-archive "$bin_dir/bootproof-operator.tar" \
  "${in_process[@]}" \
  --subject-file examples/subjects/bootproof-bootid.yaml --subject-file examples/subjects/bootproof-legacy.yaml \
  --subject-file examples/subjects/bootproof-bootid-deployment.yaml --subject-file examples/subjects/bootproof-legacy-deployment.yaml \
  --parallel "$parallel" --report-dir "$report_dir"
rc=$?
[ -f "$report_dir/junit.xml" ] && cp "$report_dir/junit.xml" "$(dirname "$report_dir")/junit-kind.xml"
if [ -f "$report_dir/results.json" ]; then
  "$bin_dir/bootproof" report "$report_dir" \
    --compare bootproof-bootid-deployment=bootproof-bootid --compare bootproof-legacy-deployment=bootproof-legacy || rc=$(( rc == 0 ? 1 : rc ))
fi
# A Deployment subject's pod logs are kept as an exec subject's output
# is: every pod it ran, pauses included.
for s in bootproof-bootid-deployment bootproof-legacy-deployment; do
  log="$report_dir/subjects/$s.log"
  if ! grep -q '/manager: .*kmm reconciler starting' "$log" 2>/dev/null; then
    echo "e2e-kind: $log does not hold the operator pods' logs (no 'kmm reconciler starting' line of a manager container)" >&2
    rc=$(( rc == 0 ? 1 : rc ))
  fi
done
# Full mode: the calibration where operators run, every variant as a
# Deployment per case on a kind cluster of its own (each known-bad one in
# its listed scenarios): the same figures as 'make calibrate', and the
# same verdict per variant. Report: _output/calibration-kind/.
if [ "$mode" = full ]; then
  cal_dir="$(dirname "$report_dir")/calibration-kind"
  # Beside the in-process world's calibration when there is one ('make
  # calibrate' before, as the e2e workflow does): a variant whose verdict
  # differs between the worlds fails the run.
  in_process_dir="$(dirname "$report_dir")/calibration"
  compare=()
  if [ -f "$in_process_dir/calibration.json" ]; then
    compare=(--compare-with "$in_process_dir")
    echo "e2e-kind: the calibration as Deployments is compared with the in-process one in $in_process_dir"
  else
    echo "e2e-kind: no in-process calibration in $in_process_dir to compare with ('make calibrate CALIBRATE_FLAGS=--listed-only' first): the Deployments' calibration is judged alone"
  fi
  rm -rf "$cal_dir"
  "$bin_dir/bootproof" calibrate --cluster kind "${image_flag[@]}" --listed-only --parallel "$parallel" "${compare[@]}" --report-dir "$cal_dir" || rc=$(( rc == 0 ? 1 : rc ))
fi
# Cluster faults on kind: the control-plane container frozen or killed in
# the middle of a case must end as an error, never a verdict. Then a run
# SIGKILLed mid-case: 'bootproof cleanup' must delete its kind cluster.
image="${image_flag[1]:-}"
if [ -z "$image" ]; then image="$("$bin_dir/bootproof" run --help | sed -n 's/.*--kind-image string.*(default "\(.*\)").*/\1/p')"; fi
faults_dir="$(dirname "$report_dir")/kind-faults"
mkdir -p "$faults_dir"
BOOTPROOF_FAULTS=1 BOOTPROOF_KIND_IMAGE="$image" BOOTPROOF_FAULTS_DIR="$faults_dir" \
  go test -count=1 -timeout 20m -v -run 'TestKindControlPlaneFaults|TestRunKilledLeavesNoKindCluster' ./harness/suites/faults/ ./internal/cli/ 2>&1 | grep -vE '^\s+[IEW][0-9]{4} '
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=$(( rc == 0 ? 1 : rc ))
echo "e2e-kind: exit $rc after $((SECONDS - start))s; JUnit $(dirname "$report_dir")/junit-kind.xml, report $report_dir/index.html, fault table $faults_dir/faults.md"
exit "$rc"
