# bootproof - run 'make help' for the targets.
SHELL := /bin/bash
GO ?= go
BIN_DIR := $(CURDIR)/bin
REPORTS_DIR := $(CURDIR)/reports
# Test timeout for 'make test'; the suite itself takes minutes.
TEST_TIMEOUT ?= 30m

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/bootproof.
	$(GO) build -o $(BIN_DIR)/bootproof ./cmd/bootproof

.PHONY: controlplane
controlplane: ## Build bin/etcd, bin/kube-apiserver, bin/kube-controller-manager from tools/controlplane (only when the pins change).
	@BIN_DIR=$(BIN_DIR) tools/controlplane/build.sh

.PHONY: test
test: controlplane ## Run every test; the embedded control plane is required, not skipped.
	BOOTPROOF_REQUIRE_CONTROLPLANE=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: lint
lint: ## gofmt and go vet.
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))"; \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

.PHONY: verify
verify: lint ## lint, plus checks that generated files are current.
	@BIN_DIR=$(BIN_DIR) hack/generate.sh --verify

.PHONY: generate
generate: ## Regenerate kmm's deepcopy code and CRD YAML with the controller-gen pinned in tools/controllertools.
	@BIN_DIR=$(BIN_DIR) hack/generate.sh

.PHONY: bench
bench: controlplane ## Benchmarks; figures go to reports/bench/ (JSON and Markdown).
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench $(GO) test -run '^$$' -bench BenchmarkStart -benchtime 5x ./harness/controlplane/
	BOOTPROOF_BENCH_DIR=$(REPORTS_DIR)/bench $(GO) test -run '^$$' -bench BenchmarkFleetScale -benchtime 1x -timeout 60m ./fakes/
	@echo "figures written to $(REPORTS_DIR)/bench/"

.PHONY: run
run: ## The default scenario matrix (arrives with the scenario engine).
	@echo "make run: the scenario engine is not built yet; 'make test' and 'bin/bootproof controlplane up' work today." >&2; exit 2

.PHONY: clean
clean: ## Remove bin/ and generated reports.
	rm -rf $(BIN_DIR)
	find $(REPORTS_DIR) -mindepth 1 -maxdepth 1 ! -name '*.go' ! -name testdata -exec rm -rf {} +
