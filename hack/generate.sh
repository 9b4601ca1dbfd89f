#!/usr/bin/env bash
# hack/generate.sh regenerates the code and manifests derived from the API
# types in pkg/apis: deepcopy functions (zz_generated.deepcopy.go) and the
# CRDs in pkg/apis/crds, post-processed by hack/crdpatch.
#
# Usage: hack/generate.sh [crd-output-dir]
#   With an output dir, only the CRDs are written there (used by `make
#   verify` to compare against the committed ones). controller-gen is
#   installed at the pinned version into bin/ on first use.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

CONTROLLER_GEN_VERSION=v0.21.0
CONTROLLER_GEN_DIR="${ROOT}/bin/controller-gen-${CONTROLLER_GEN_VERSION}"
CONTROLLER_GEN="${CONTROLLER_GEN_DIR}/controller-gen"
if [[ ! -x "${CONTROLLER_GEN}" ]]; then
  echo "installing controller-gen ${CONTROLLER_GEN_VERSION} into ${CONTROLLER_GEN_DIR}" >&2
  GOBIN="${CONTROLLER_GEN_DIR}" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}"
fi

CRD_DIR="${1:-${ROOT}/pkg/apis/crds}"
if [[ $# -eq 0 ]]; then
  "${CONTROLLER_GEN}" object paths=./pkg/apis/...
fi
"${CONTROLLER_GEN}" crd paths=./pkg/apis/... output:crd:artifacts:config="${CRD_DIR}"
go run ./hack/crdpatch "${CRD_DIR}"
