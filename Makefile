# karp Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := $(CURDIR)/bin
export KARP_BIN_DIR := $(BIN)
# -trimpath keeps the checkout's path out of the build cache's keys: a
# second clone (CI's clean clone, a git worktree) reuses what another
# compiled, tests and lint included, instead of compiling the module and its
# dependencies again (about nine CPU minutes for golangci-lint alone).
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# Everything is built without cgo, as the image's binary must be (static):
# one build configuration for the binaries, the tests, lint and the image.
# With cgo on elsewhere the image's build compiled the module and its
# dependencies a second time; on a machine with empty caches that alone ran
# hack/image's test past its 20-minute timeout. The race detector needs
# cgo: test-race turns it on.
export CGO_ENABLED := 0

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
# One go build for both: their links run side by side.
build: ## build bin/karp (the CLI) and bin/karp-controller (the controller alone, the binary to deploy)
	$(GO) build -o $(BIN)/ ./cmd/karp ./cmd/karp-controller

.PHONY: tools
tools: ## build the local control plane binaries into bin/k8s (no-op when the pins are unchanged)
	hack/build-tools.sh

.PHONY: run
run: build tools ## local cluster + karp controller (kwok provider) + examples/, with a live view of nodes; Ctrl-C stops all
	$(BIN)/karp run --bin-dir $(BIN)/k8s $(foreach f,$(RUN_EXAMPLES),--apply $(f))

# The examples `make run` applies: the NodePools default and stable, gpu and
# generalcompute with their KWOKNodeClass, the all-nodes DaemonSet, and the
# inflate-gpu, my-team and nginx-demo workloads.
RUN_EXAMPLES ?= examples/nodepools-default-stable.yaml examples/nodepool-gpu.yaml examples/nodepool-generalcompute.yaml \
	examples/daemonset-all-nodes.yaml examples/deployment-inflate-gpu.yaml examples/deployment-my-team.yaml examples/nginx-demo.yaml

# Flags of every `go test` below. -ldflags=-w links the test binaries
# without DWARF debug information (stack traces do not need it): a test
# link is about 25% less CPU, and make test links some 130 of them.
# -vet=off: go test would vet each package it tests (again in each tier)
# with a subset of the analyzers `make verify` already runs over every
# package and its tests (golangci-lint's govet); vetting the module with
# go test's analyzers took 264 CPU-s (139 s on 2 cores) when none of it
# was cached, and a commit that changes a widely imported package's API
# makes most of it uncached.
TEST_FLAGS := -count=1 -ldflags=-w -vet=off

# The tiers run their packages with hack/gotest, which is `go test -count=1`
# but for the link: go test links every test binary again on each run
# (about 4.5 CPU-s each, some 126 in make test), gotest only those whose
# packages' code changed since the last run, keeping the others in
# KARP_TEST_BIN_CACHE (default ~/.cache/karp/testbin, one binary per
# package, up to about 50 MB each). It never vets, as -vet=off above.
GOTEST = $(GO) run ./hack/gotest -ldflags=-w

# The test tiers. hack/test-tiers.sh puts every package in exactly one:
# e2e (test/e2e), integration (tests that start an API server) or unit (the
# rest). `make test` runs verify and the three tiers, in that order.
TIER_PKGS = $(shell hack/test-tiers.sh $(1))

.PHONY: test
test: ## run everything CI runs: verify, then the unit, integration and end-to-end tiers (hack/test.sh prints each one's time)
	@MAKE="$(MAKE)" hack/test.sh

.PHONY: test-unit
test-unit: ## run the unit tier: pure tests, no API server (well under a minute)
	KARP_TEST_TIER=unit $(GOTEST) -timeout 5m $(call TIER_PKGS,unit)

.PHONY: test-race
test-race: tools ## run the unit and integration tiers under the race detector (outside make test: several times slower)
	CGO_ENABLED=1 KARP_TEST_TIER=unit $(GOTEST) -race -timeout 20m $(call TIER_PKGS,unit)
	CGO_ENABLED=1 KARP_TEST_TIER=integration $(GOTEST) -race -timeout 40m $(call TIER_PKGS,integration)

# Integration packages spend much of their time waiting (on their API
# server, on controllers' timers): at go test's default of two packages at
# once on two cores the tier kept 1.3 cores busy, so four run at once.
INTEGRATION_PARALLEL ?= 4
.PHONY: test-integration
test-integration: tools ## run the integration tier: controller and API tests against a real etcd + kube-apiserver (envtest)
	KARP_TEST_TIER=integration $(GOTEST) -p $(INTEGRATION_PARALLEL) -timeout 20m $(call TIER_PKGS,integration)

# The e2e packages run the binaries `make build` just linked
# (KARP_E2E_PREBUILT_DIR) instead of each linking its own. Each package
# runs its own local control plane and mostly waits on it, so four run at
# once on two cores; the longest start first (in the order given), so the
# tier is not left waiting on one that started last. (hack/gotest
# -longest-first orders them by their last recorded times instead; in two
# clean-clone runs that was no faster: docs/performance.md.)
# Each control plane's components run with GOMAXPROCS=1
# (framework.ControlPlaneGOMAXPROCSEnv): alone on the machine,
# test/e2e/provisioning then used 56 CPU-s against 69 and test/e2e/install
# 22 against 30, at the same wall time.
# That list is by their times in clean-clone runs
# (docs/performance.md): aws 508-550 s, disruption 493-530, the chaos
# presubmit 304-380 (the most CPU of all, so it starts early too),
# availability 346-369, signals 325-340, faults 317-349, awsfeatures
# 156-231.
E2E_PARALLEL ?= 4
MODULE := $(shell $(GO) list -m)
E2E_LONGEST = $(addprefix $(MODULE)/test/e2e/,aws disruption chaos availability signals faults awsfeatures)
.PHONY: e2e
# Each e2e test appends its time to E2E_TIMES, and each package its wall
# time and CPU (framework.TimesEnv); the tier ends, passed or failed,
# with the packages and the slowest 15 tests.
E2E_TIMES := $(BIN)/e2e-times.tsv
e2e: tools build ## run the end-to-end tier against the full local control plane
	@rm -f $(E2E_TIMES)
	KARP_E2E_CONTROL_PLANE_GOMAXPROCS=1 KARP_E2E_TIMES=$(E2E_TIMES) KARP_TEST_TIER=e2e KARP_E2E_PREBUILT_DIR=$(BIN) $(GOTEST) -p $(E2E_PARALLEL) -timeout 30m \
		$(E2E_LONGEST) $(filter-out $(E2E_LONGEST),$(call TIER_PKGS,e2e)) || status=$$?; \
	if [[ -f $(E2E_TIMES) ]]; then \
		echo "e2e: packages (wall seconds, package, CPU of the package and its processes):"; \
		awk -F'\t' '$$3 == "(package)"' $(E2E_TIMES) | sort -rn | cut -f1,2,4 || true; \
		echo "e2e: the slowest tests (seconds, package, test, result):"; \
		awk -F'\t' '$$3 != "(package)"' $(E2E_TIMES) | sort -rn | head -15 || true; \
	fi; \
	exit $${status:-0}

.PHONY: availability
availability: tools build ## run the availability e2e verbose, each phase also with karp's protections off (upstream's behaviour), and print both figures
	KARP_E2E_AVAILABILITY_BASELINE=1 KARP_TEST_TIER=e2e KARP_E2E_PREBUILT_DIR=$(BIN) $(GO) test $(TEST_FLAGS) -timeout 40m -v \
		-run TestDisruptionKeepsDeploymentsWithinTheirRolloutBudget ./test/e2e/availability/

# The scale suite (test/e2e/scale): the diverse benchmark mix scaled to
# KARP_SCALE_PODS pods on the local control plane, down to 30% and back.
KARP_SCALE_PODS ?= 10000

.PHONY: bench-e2e
bench-e2e: tools build ## run the scale suite alone, verbose: KARP_SCALE_PODS (10000) pods of the diverse mix up, down to 30% and back, with time, memory, CPU, API requests and cost per step
	KARP_SCALE=1 KARP_SCALE_PODS=$(KARP_SCALE_PODS) KARP_TEST_TIER=e2e KARP_E2E_PREBUILT_DIR=$(BIN) $(GO) test $(TEST_FLAGS) -timeout 240m -v -run TestScaleDiverse ./test/e2e/scale/

# `make e2e` runs the chaos suite's short presubmit run (a fixed seed, one
# fault a phase); `make chaos` runs the full one with a new seed.
KARP_CHAOS_SEED ?= random

.PHONY: chaos
chaos: tools build ## run the full chaos suite alone, verbose, with a new seed (KARP_CHAOS_SEED=N replays a run, KARP_CHAOS_SOAK=1 runs longer; `make e2e` runs its fixed-seed short run)
	KARP_CHAOS_SEED=$(KARP_CHAOS_SEED) KARP_TEST_TIER=e2e KARP_E2E_PREBUILT_DIR=$(BIN) $(GO) test $(TEST_FLAGS) -timeout 90m -v ./test/e2e/chaos/

.PHONY: tiers
tiers: ## print each package's test tier
	@hack/test-tiers.sh all

.PHONY: generate
generate: ## regenerate deepcopy functions and CRDs from pkg/apis, the charts' CRD copies and RBAC rules from the code's markers (controller-gen v0.21.0)
	hack/generate.sh

.PHONY: verify
# golangci-lint's govet runs the analyzers `go vet` runs by default (the
# pinned v2.15.0 lists cmd/vet's set of go1.26), on the same packages and
# their tests, so a separate `go vet ./...` type-checked the module a second
# time for nothing (three CPU minutes on two cores).
verify: ## golangci-lint (.golangci.yml: govet, staticcheck, depguard, ...) and the generated files (pkg/apis, the charts' CRDs and RBAC rules) up to date
	hack/lint.sh
	hack/verify.sh

.PHONY: lint
lint: ## run golangci-lint alone (built from hack/tools/lint on first use)
	hack/lint.sh

.PHONY: fmt
fmt: ## format the code with golangci-lint's gofmt and goimports
	hack/lint.sh --fmt

.PHONY: image
image: ## build the karp-controller image (static, non-root, reproducible) as an OCI layout in bin/image/karp-controller, without a container daemon
	hack/image.sh
