# karp Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := $(CURDIR)/bin
export KARP_BIN_DIR := $(BIN)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/karp (the CLI) and bin/karp-controller (the controller alone, the binary to deploy)
	$(GO) build -o $(BIN)/karp ./cmd/karp
	$(GO) build -o $(BIN)/karp-controller ./cmd/karp-controller

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

.PHONY: e2e
e2e: tools ## run only the end-to-end suites against the local control plane
	$(GO) test -count=1 -timeout 30m ./test/e2e/...

.PHONY: test
test: tools ## run every test: unit, controller (envtest) and end-to-end
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

.PHONY: generate
generate: ## regenerate deepcopy functions and CRDs from pkg/apis, the charts' CRD copies and RBAC rules from the code's markers (controller-gen v0.21.0)
	hack/generate.sh

.PHONY: verify
verify: ## fail when generated files (pkg/apis, the charts' CRDs and RBAC rules) are stale
	hack/verify.sh

.PHONY: image
image: ## build the karp-controller image (static, non-root, reproducible) as an OCI layout in bin/image/karp-controller, without a container daemon
	hack/image.sh
