#!/usr/bin/env bash
# hack/generate.sh regenerates the code and manifests derived from the API
# types in pkg/apis and the code's markers: deepcopy functions
# (zz_generated.deepcopy.go), the CRDs in pkg/apis/crds (post-processed by
# hack/crdpatch) and their copies in the Helm charts (charts/karp/crds,
# charts/karp-crd/files), and the RBAC rules the karp chart binds
# (charts/karp/rbac/role.yaml, from every +kubebuilder:rbac marker under
# pkg/: cluster-scoped markers make the ClusterRole, markers naming a
# namespace the Role in the release namespace), and the depguard rules in
# .golangci.yml that keep one controller from importing another, one per
# controller under pkg/controllers, pkg/cloudprovider/aws/controllers and
# pkg/cloudprovider/kwok/controllers (hack/importrules).
#
# Usage: hack/generate.sh [crd-output-dir [rbac-output-dir]]
#   With output dirs, only the CRDs (and the RBAC rules) are written there
#   (used by `make verify` to compare against the committed ones).
#   controller-gen is installed at the pinned version into bin/ on first use
#   (from the tool cache every checkout shares, hack/toolcache.sh, when it
#   has it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

CONTROLLER_GEN_VERSION=v0.21.0
CONTROLLER_GEN_DIR="${ROOT}/bin/controller-gen-${CONTROLLER_GEN_VERSION}"
CONTROLLER_GEN="${CONTROLLER_GEN_DIR}/controller-gen"
# shellcheck source=hack/toolcache.sh
source "${ROOT}/hack/toolcache.sh"
CONTROLLER_GEN_ENTRY="controller-gen-$({
  echo "${CONTROLLER_GEN_VERSION}"
  go version
} | sha256sum | cut -c1-16)"
if [[ ! -x "${CONTROLLER_GEN}" ]] && toolcache_get "${CONTROLLER_GEN_ENTRY}" "${CONTROLLER_GEN_DIR}" controller-gen; then
  echo "controller-gen ${CONTROLLER_GEN_VERSION} taken from ${TOOLCACHE}/${CONTROLLER_GEN_ENTRY}" >&2
fi
if [[ ! -x "${CONTROLLER_GEN}" ]]; then
  echo "installing controller-gen ${CONTROLLER_GEN_VERSION} into ${CONTROLLER_GEN_DIR}" >&2
  GOBIN="${CONTROLLER_GEN_DIR}" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}"
  toolcache_put "${CONTROLLER_GEN_ENTRY}" "${CONTROLLER_GEN_DIR}" controller-gen
fi

CRD_DIR="${1:-${ROOT}/pkg/apis/crds}"
RBAC_DIR="${2:-}"
if [[ $# -eq 0 ]]; then
  "${CONTROLLER_GEN}" object paths=./pkg/apis/...
  RBAC_DIR="${ROOT}/charts/karp/rbac"
fi
"${CONTROLLER_GEN}" crd paths=./pkg/apis/... output:crd:artifacts:config="${CRD_DIR}"
go run ./hack/crdpatch "${CRD_DIR}"
if [[ -n "${RBAC_DIR}" ]]; then
  "${CONTROLLER_GEN}" rbac:roleName=karp paths=./pkg/... output:rbac:artifacts:config="${RBAC_DIR}"
fi
if [[ $# -eq 0 ]]; then
  for dir in charts/karp/crds charts/karp-crd/files; do
    rm -f "${dir}"/*.yaml
    cp pkg/apis/crds/*.yaml "${dir}/"
  done
fi
if [[ $# -eq 0 ]]; then
  go run ./hack/importrules -write
fi
