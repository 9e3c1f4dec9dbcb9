# bootproof - run 'make help' for the targets.
SHELL := /bin/bash
GO ?= go
# Every go command of these targets builds with -trimpath and without cgo,
# as the control plane, the kind node image's binaries and the guest agent
# are built: source paths and cgo are part of a package's compiled form, so
# one flavour lets the control plane's compile (first in .ci/run) serve the
# tests', the binaries' and the kind image's. Measured: a package set built
# with -trimpath, then built again without it, recompiled 269 of 270
# packages; cmd/bootproof built with cgo after a build without it, 460 of
# 930. The race detector needs cgo: 'make test' turns it on for that pass
# alone (a build of its own anyway). TestSharedModuleVersions keeps the
# modules bootproof and the control plane both link at one version.
# tools/buildvcs.sh adds -buildvcs=false where git refuses this checkout
# (root in another user's checkout), which would otherwise fail go build.
export GOFLAGS := -trimpath $(shell tools/buildvcs.sh) $(GOFLAGS)
export CGO_ENABLED := 0
BIN_DIR := $(CURDIR)/bin
# Run outputs (reports, JUnit, figures); not the reports/ Go package.
REPORTS_DIR := $(CURDIR)/_output
# Test timeout for 'make test'; the suite itself takes minutes.
TEST_TIMEOUT ?= 30m
# Cases 'make run' and 'make soak' run at once (most of a case is waiting:
# 16 on 2 cores ends the catalog with its longest case), and Ginkgo
# processes of the catalog suite in 'make test'.
PARALLEL ?= 16
TEST_PROCS ?= 8
# Runs of the catalog 'make soak' makes.
RUNS ?= 5
# Runs of each case 'make calibrate' makes, and more of its flags
# (.ci/run: --listed-only, each known-bad variant in its listed scenarios only).
REPEAT ?= 1
CALIBRATE_FLAGS ?=
# 'make mutate': mutants judged (0: every one; N: a sample of N chosen by
# MUTATE_SEED, by default the commit, so each commit judges other ones),
# cases at once, and more flags (e.g. --mutant 17).
MUTATE_SAMPLE ?= 0
MUTATE_SEED ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
MUTATE_PARALLEL ?= 12
MUTATE_FLAGS ?=
# Ginkgo label filter for the catalog suite in 'make test' (empty: all).
LABELS ?=
# Scenario label for 'make e2e-libvirt' (empty: every scenario of the
# catalog; .ci/run uses vm-smoke) and cases run at once on VMs.
LIBVIRT_LABEL ?=
LIBVIRT_PARALLEL ?= 2
# Where 'make guest-image' prepares the VM guest (kernel, boot kernel,
# initramfs): 'bootproof run --nodes libvirt' run here (--cache-dir .cache)
# and the VM tests (vmprovision/vmtest) find it there.
VM_CACHE_DIR := $(CURDIR)/.cache
# Nodes per fleet, settling time and steady window of 'make bench-fleet'.
# (BOOTPROOF_BENCH_FLEET_KWOK_FIRST=1 in the environment measures KWOK first.)
BENCH_FLEET_NODES ?= 1000
BENCH_FLEET_SETTLE ?= 30s
BENCH_FLEET_WINDOW ?= 120s
# Node counts of 'make bench-fleet-max' (increasing), and each step's settling time and window.
BENCH_FLEETMAX_STEPS ?= 1000,2000,3000,4000,5000,6000,8000,10000
BENCH_FLEETMAX_SETTLE ?= 20s
BENCH_FLEETMAX_WINDOW ?= 60s
# Node image of 'make e2e-kind': local (built here by 'make kind-image', no
# registry needed), published (kind's kindest/node, pinned by digest in
# harness/cluster), or an image name.
KIND_NODE_IMAGE ?= local
# Cases 'make e2e-kind' runs at once (the kind node shares the machine).
KIND_PARALLEL ?= 4
# Subject columns of 'make e2e-kind': full (bootproof's reconciler
# in-process, as a process and as a Deployment) or ci (the process and the
# Deployment only, whose equality is the point on kind; the in-process
# reconciler is judged on the embedded cluster by 'make test').
KIND_MODE ?= full

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/bootproof (VM support included), statically linked, with a progress line a minute.
	@GO=$(GO) tools/gobuild.sh bootproof $(BIN_DIR)/bootproof ./cmd/bootproof

.PHONY: build-libvirt
build-libvirt: build ## Build bin/bootproof and the guest agent bin/bootproof-agent that VM nodes boot.
	@GO=$(GO) tools/gobuild.sh bootproof-agent $(BIN_DIR)/bootproof-agent ./cmd/bootproof-agent '-ldflags=-s -w'

.PHONY: guest-image
guest-image: build-libvirt ## Prepare what VM nodes boot, once, into .cache (bin/bootproof image build): the guest kernel (downloaded from the distribution's archive the first time), its bootable ELF and the initramfs with bin/bootproof-agent as /init; says how long it took.
	@start=$$(date +%s); $(BIN_DIR)/bootproof image build --agent $(BIN_DIR)/bootproof-agent --cache-dir $(VM_CACHE_DIR) && \
	  echo "guest-image: prepared in $$(($$(date +%s) - start)) s in $(VM_CACHE_DIR) (reused until the kernel package or the agent changes)"

.PHONY: controlplane
controlplane: ## Build bin/etcd, bin/kube-apiserver, bin/kube-controller-manager from tools/controlplane (only when the pins change).
	@BIN_DIR=$(BIN_DIR) tools/controlplane/build.sh

.PHONY: test
test: controlplane tools gotestsum ## Every test (JUnit: _output/junit-unit.xml), the race detector on the packages that need no control plane, and the catalog suite on the embedded cluster, one Ginkgo spec per case in TEST_PROCS processes (JUnit: _output/junit-embedded.xml).
	@mkdir -p $(REPORTS_DIR)/race
	@# The race pass builds every package again, with the race detector (minutes on a cold cache): it
	@# runs beside the first pass at nice 10, on the CPU that pass leaves idle, in a process group of
	@# its own (stopped with the recipe) but in the same session, so that the kernel's per-session
	@# scheduling (autogroup) does not give it a share of its own, and its output follows the first pass's.
	@# No vet step: the first pass vets the same packages.
	@set -m; BOOTPROOF_REQUIRE_TOOLS=1 CGO_ENABLED=1 nice -n 10 $(GO) test -race -vet=off -count=1 -timeout $(TEST_TIMEOUT) $$(hack/race-packages.sh) >$(REPORTS_DIR)/race/race.log 2>&1 & race=$$!; set +m; \
	  trap 'kill -- -$$race 2>/dev/null' EXIT INT TERM; \
	  echo "race detector: go test -race on the packages that need no control plane, beside the first pass (at nice 10; output in $(REPORTS_DIR)/race/race.log, shown after the first pass)"; \
	  echo "BOOTPROOF_REQUIRE_CONTROLPLANE=1 BOOTPROOF_REQUIRE_TOOLS=1 $(BIN_DIR)/gotestsum --format testname --junitfile $(REPORTS_DIR)/junit-unit.xml -- -p 4 -parallel 4 -count=1 -timeout $(TEST_TIMEOUT) PACKAGES"; \
	  BOOTPROOF_REQUIRE_CONTROLPLANE=1 BOOTPROOF_REQUIRE_TOOLS=1 $(BIN_DIR)/gotestsum --format testname --junitfile $(REPORTS_DIR)/junit-unit.xml -- \
	    -p 4 -parallel 4 -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /harness/suites/); unit=$$?; \
	  wait $$race; race_rc=$$?; trap - EXIT INT TERM; \
	  echo "--- go test -race (exit $$race_rc):"; cat $(REPORTS_DIR)/race/race.log; \
	  [ $$unit -eq 0 ] && [ $$race_rc -eq 0 ]
	BOOTPROOF_REQUIRE_CONTROLPLANE=1 BOOTPROOF_SUITE_REPORT_DIR=$(REPORTS_DIR)/embedded $(GO) run github.com/onsi/ginkgo/v2/ginkgo run \
	  --procs=$(TEST_PROCS) --timeout=$(TEST_TIMEOUT) --junit-report=$(REPORTS_DIR)/junit-embedded.xml --label-filter='$(LABELS)' ./harness/suites/fake/
	@echo "catalog report: $(REPORTS_DIR)/embedded/index.html"

# How long 'make fuzz' runs each fuzz target.
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Run each Go fuzz target (subject and scenario files, results.json, the runtime shim's rewriting) for FUZZTIME (default 30s); new failing inputs land in the package's testdata/fuzz/.
	@set -e; for t in reports:FuzzDecodeResults scenarios:FuzzDecode internal/subject:FuzzDecodeFile internal/kindhost:FuzzDropCapabilities; do \
	  echo "fuzz: $${t#*:} in ./$${t%%:*} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) ./$${t%%:*}/; \
	done

.PHONY: test-faults
test-faults: controlplane tools ## Fault injection on the embedded cluster (components killed, watches expired, subject crash, unplanned reboot, SIGINT): every verdict must be an error; table in _output/faults/.
	@mkdir -p $(REPORTS_DIR)/faults
	BOOTPROOF_FAULTS=1 BOOTPROOF_REQUIRE_CONTROLPLANE=1 BOOTPROOF_FAULTS_DIR=$(REPORTS_DIR)/faults $(GO) test -count=1 -timeout 45m -v ./harness/suites/faults/ 2>&1 \
	  | grep -vE '^\s+[IEW][0-9]{4} ' ; test $${PIPESTATUS[0]} -eq 0
	@echo "fault table: $(REPORTS_DIR)/faults/faults.md"

.PHONY: soak
soak: controlplane build ## Run the catalog RUNS times (default 5) on the embedded cluster, each on a fresh control plane; flake table in _output/soak/soak.md.
	@rm -rf $(REPORTS_DIR)/soak && mkdir -p $(REPORTS_DIR)/soak
	@for i in $$(seq 1 $(RUNS)); do \
	  $(BIN_DIR)/bootproof run --cluster embedded --nodes fake --subject bootid --subject legacy --parallel $(PARALLEL) \
	    --report-dir $(REPORTS_DIR)/soak/run-$$i > $(REPORTS_DIR)/soak/run-$$i.log 2>&1; \
	  echo "soak run $$i of $(RUNS): exit $$?, $$(grep -E '^[0-9]+ passed' $(REPORTS_DIR)/soak/run-$$i.log)"; \
	done
	$(BIN_DIR)/bootproof report --soak $(REPORTS_DIR)/soak

.PHONY: tools
tools: ## The host tools the tests need (xmllint validates JUnit output): installed with apt as root on Debian/Ubuntu, else named.
	@hack/deps-test.sh

.PHONY: gotestsum
gotestsum: ## Build bin/gotestsum (JUnit for plain go test packages) from the pin in tools/gotestsum.
	@BIN_DIR=$(BIN_DIR) tools/build.sh gotestsum gotestsum gotest.tools/gotestsum

.PHONY: lint
lint: ## gofmt and go vet.
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))"; \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

.PHONY: verify
verify: lint ## lint, golangci-lint (.golangci.yaml: linters, function length, dependency directions), generated files current, workflows pass actionlint and their expressions evaluate as tools/workflowcheck's tables say, and the release's dry run (hack/release.sh --snapshot, into a temporary directory).
	@BIN_DIR=$(BIN_DIR) tools/build.sh golangci golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	$(BIN_DIR)/golangci-lint run ./...
	@BIN_DIR=$(BIN_DIR) hack/generate.sh --verify
	@BIN_DIR=$(BIN_DIR) tools/build.sh actionlint actionlint github.com/rhysd/actionlint/cmd/actionlint
	$(BIN_DIR)/actionlint .github/workflows/*.yaml
	@echo "workflow expressions evaluated for push, pull_request, schedule and workflow_dispatch (tools/workflowcheck)"
	@cd tools/workflowcheck && $(GO) vet ./... && $(GO) test -count=1 ./...
	@# The release's dry run: linux/amd64 and linux/arm64 binaries, operator images, checksums, checked
	@# (in a temporary directory, removed after: nothing of it is an output).
	@tmp="$$(mktemp -d)" && trap 'rm -rf "$$tmp"' EXIT && hack/release.sh --snapshot --out "$$tmp/release"

.PHONY: generate
generate: ## Regenerate kmm's deepcopy code and CRD YAML with the controller-gen pinned in tools/controllertools.
	@BIN_DIR=$(BIN_DIR) hack/generate.sh

.PHONY: bench
bench: controlplane ## Benchmarks; figures go to _output/bench/ (JSON and Markdown).
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench $(GO) test -run '^$$' -bench BenchmarkStart -benchtime 5x ./harness/controlplane/
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench $(GO) test -run '^$$' -bench BenchmarkReloadLatency -benchtime 1x -timeout 30m ./internal/runner/
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench $(GO) test -run '^$$' -bench BenchmarkFleetScale -benchtime 1x -timeout 60m ./fakes/
	@echo "figures written to $(REPORTS_DIR)/bench/"

.PHONY: kwok
kwok: ## Build bin/kwok (sigs.k8s.io/kwok, the baseline of 'make bench-fleet') from the pin in tools/kwok.
	@BIN_DIR=$(BIN_DIR) tools/build.sh kwok kwok sigs.k8s.io/kwok/cmd/kwok

.PHONY: bench-fleet
bench-fleet: controlplane build kwok ## bootproof's fleet vs KWOK, BENCH_FLEET_NODES (default 1000) nodes each: CPU, RSS, plane CPU, false NotReady, lease lateness, ratios; _output/bench/fleet-vs-kwok.{json,md}.
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench BOOTPROOF_BENCH_FLEET_NODES=$(BENCH_FLEET_NODES) \
	  BOOTPROOF_BENCH_FLEET_SETTLE=$(BENCH_FLEET_SETTLE) BOOTPROOF_BENCH_FLEET_WINDOW=$(BENCH_FLEET_WINDOW) \
	  $(GO) test -run '^$$' -bench BenchmarkFleetVsKWOK -benchtime 1x -timeout 60m -v ./internal/bench/
	@echo "figures written to $(REPORTS_DIR)/bench/fleet-vs-kwok.md"

.PHONY: bench-fleet-max
bench-fleet-max: controlplane build ## The largest fleet this machine holds: bootproof's fleet alone at BENCH_FLEETMAX_STEPS nodes, until false NotReady or saturation; _output/bench/fleet-max.{json,md}.
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench BOOTPROOF_BENCH_FLEETMAX_STEPS=$(BENCH_FLEETMAX_STEPS) \
	  BOOTPROOF_BENCH_FLEETMAX_SETTLE=$(BENCH_FLEETMAX_SETTLE) BOOTPROOF_BENCH_FLEETMAX_WINDOW=$(BENCH_FLEETMAX_WINDOW) \
	  $(GO) test -run '^$$' -bench BenchmarkFleetMax -benchtime 1x -timeout 120m -v ./internal/bench/
	@echo "figures written to $(REPORTS_DIR)/bench/fleet-max.md"

.PHONY: run
run: controlplane build ## Run the whole catalog with the bootid and legacy subjects on the embedded cluster; reports under _output/latest/.
	$(BIN_DIR)/bootproof run --cluster embedded --nodes fake --subject bootid --subject legacy --parallel $(PARALLEL)

.PHONY: calibrate
calibrate: controlplane build ## Measure bootproof's sensitivity and specificity on the calibration variants (examples/calibration/: known-bad and slow-but-correct reconcilers) on the embedded cluster: _output/calibration/calibration.md and .json (REPEAT=N runs each case N times; CALIBRATE_FLAGS=--listed-only runs known-bad variants only where their files list them; CALIBRATE_FLAGS='--cluster kind --kind-image IMAGE' runs the variants as Deployments, one per case, on a kind cluster).
	@rm -rf $(REPORTS_DIR)/calibration
	$(BIN_DIR)/bootproof calibrate --parallel $(PARALLEL) --repeat $(REPEAT) $(CALIBRATE_FLAGS) --report-dir $(REPORTS_DIR)/calibration

.PHONY: mutate
mutate: controlplane build ## Mutation testing of the reconciler (kmm/controller, kmm/detect, kmm/worker) against the catalog on the embedded cluster: every mutant, or MUTATE_SAMPLE=N of them chosen by the commit; survivors must be explained in kmm/mutation-triage.yaml; _output/mutate/mutate.md and .json.
	@rm -rf $(REPORTS_DIR)/mutate
	$(BIN_DIR)/bootproof mutate --parallel $(MUTATE_PARALLEL) $(if $(filter-out 0,$(MUTATE_SAMPLE)),--sample $(MUTATE_SAMPLE) --seed $(MUTATE_SEED)) \
	  --report-dir $(REPORTS_DIR)/mutate $(MUTATE_FLAGS)

.PHONY: deps-kind
deps-kind: ## Install and start a container engine for kind (Debian/Ubuntu, as root), and where root cannot grant every capability, the runtime shim --privileged needs (merged into /etc/docker/daemon.json, kept as found; never stops a dockerd it did not start). Again: changes nothing.
	hack/deps-kind.sh

.PHONY: deps-kind-uninstall
deps-kind-uninstall: ## Undo 'make deps-kind' (root): daemon.json back byte for byte, the shim and probe images removed, its dockerd stopped or restarted, the packages it added removed (DEPS_KIND_UNINSTALL_FLAGS=--keep-packages keeps them).
	hack/deps-kind.sh --uninstall $(DEPS_KIND_UNINSTALL_FLAGS)

.PHONY: kind-image
kind-image: ## Build bootproof's kind node image here, with no registry (root, docker, debootstrap); cached by its pins.
	@hack/kind-image.sh

.PHONY: e2e-kind
e2e-kind: build ## The catalog on a kind cluster (needs docker or podman; KIND_NODE_IMAGE=local|published|IMAGE): the reconciler as a process and as a Deployment, and with KIND_MODE=full (default) in-process too (bootid, legacy); JUnit: _output/junit-kind.xml.
	@rm -rf $(REPORTS_DIR)/kind && mkdir -p $(REPORTS_DIR)
	@hack/e2e-kind.sh "$(KIND_NODE_IMAGE)" "$(KIND_PARALLEL)" "$(REPORTS_DIR)/kind" "$(BIN_DIR)" "$(KIND_MODE)"

.PHONY: deps-libvirt
deps-libvirt: ## Install QEMU, libvirt and kmod (Debian/Ubuntu, as root); start libvirtd and virtlogd when no init system does.
	hack/deps-libvirt.sh

.PHONY: e2e-libvirt
e2e-libvirt: controlplane gotestsum ## Real VMs: the guest prepared first (guest-image, outside every test's timeout), every reboot mode over libvirt, guest isolation, SIGKILLed runs, a first run from an empty cache, then the catalog (LIBVIRT_LABEL=vm-smoke: a subset) with bootid and legacy on VM nodes.
	@hack/preflight-libvirt.sh
	@$(MAKE) --no-print-directory guest-image
	@rm -rf $(REPORTS_DIR)/libvirt && mkdir -p $(REPORTS_DIR)
	BOOTPROOF_VM_TEST=1 BOOTPROOF_REQUIRE_CONTROLPLANE=1 $(BIN_DIR)/gotestsum --format testname --junitfile $(REPORTS_DIR)/junit-libvirt-modes.xml -- \
	  -count=1 -p 1 -timeout 60m -run 'TestVMBootRebootQEMU|TestLibvirtRebootModes|TestVMIsolation|TestLibvirtKilledOwner|TestRunKilledLeavesNoVM|TestVMFirstRunEmptyCache' ./vmprovision/ ./internal/cli/
	$(BIN_DIR)/bootproof run --cluster embedded --nodes libvirt --subject bootid --subject legacy --parallel $(LIBVIRT_PARALLEL) \
	  $(if $(LIBVIRT_LABEL),--label $(LIBVIRT_LABEL)) --report-dir $(REPORTS_DIR)/libvirt; rc=$$?; \
	  if [ -f $(REPORTS_DIR)/libvirt/junit.xml ]; then cp $(REPORTS_DIR)/libvirt/junit.xml $(REPORTS_DIR)/junit-libvirt.xml; fi; exit $$rc
	@echo "JUnit: $(REPORTS_DIR)/junit-libvirt.xml (catalog), $(REPORTS_DIR)/junit-libvirt-modes.xml (reboot modes); report and serial logs: $(REPORTS_DIR)/libvirt/"

.PHONY: bench-libvirt
bench-libvirt: controlplane ## VM reboot latency (reset -> first heartbeat, reset -> module loaded, and the boot phases between) over 5 reboots; figures in _output/bench/.
	@hack/preflight-libvirt.sh
	@$(MAKE) --no-print-directory guest-image
	BOOTPROOF_VM_TEST=1 BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench $(GO) test -run '^$$' -bench BenchmarkLibvirtReboot -benchtime 1x -timeout 30m ./internal/runner/
	@echo "figures written to $(REPORTS_DIR)/bench/"

.PHONY: clean
clean: ## Remove bin/ and the run outputs in _output/.
	rm -rf $(BIN_DIR) $(REPORTS_DIR)
