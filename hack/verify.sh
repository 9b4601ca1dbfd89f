#!/usr/bin/env bash
# hack/verify.sh fails when the generated files are stale: it regenerates
# the deepcopy functions, the CRDs and the chart's RBAC rules into a
# temporary directory and diffs them against the committed ones (and the
# charts' CRD copies against pkg/apis/crds), and checks the controller
# import rules in .golangci.yml against the package list (hack/importrules). It never writes into
# the working tree, so it is safe to run while others edit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

# CRDs and RBAC rules (installs the pinned controller-gen if needed).
hack/generate.sh "${TMP}/crds" "${TMP}/rbac"

CONTROLLER_GEN="${ROOT}/bin/controller-gen-v0.21.0/controller-gen"
status=0
for pkg in v1 v1alpha1 kwok/v1alpha1 aws/v1 autoscaling/v1 autoscaling/v1beta1; do
  "${CONTROLLER_GEN}" object paths="./pkg/apis/${pkg}" output:object:dir="${TMP}/object/${pkg}"
  if ! diff -u "pkg/apis/${pkg}/zz_generated.deepcopy.go" "${TMP}/object/${pkg}/zz_generated.deepcopy.go"; then
    status=1
  fi
done

for f in "${TMP}"/crds/*.yaml; do
  if ! diff -u "pkg/apis/crds/$(basename "${f}")" "${f}"; then
    status=1
  fi
done
for f in pkg/apis/crds/*.yaml; do
  if [[ ! -e "${TMP}/crds/$(basename "${f}")" ]]; then
    echo "pkg/apis/crds/$(basename "${f}") is no longer generated" >&2
    status=1
  fi
done

if ! diff -u charts/karp/rbac/role.yaml "${TMP}/rbac/role.yaml"; then
  echo "charts/karp/rbac/role.yaml does not match the +kubebuilder:rbac markers under pkg/" >&2
  status=1
fi
for dir in charts/karp/crds charts/karp-crd/files; do
  if ! diff -r -u pkg/apis/crds "${dir}" --exclude='*.go'; then
    echo "${dir} is not a copy of pkg/apis/crds" >&2
    status=1
  fi
done

# The depguard rules that keep controllers apart, one per controller.
if ! go run ./hack/importrules; then
  status=1
fi

if [[ ${status} -ne 0 ]]; then
  echo "generated files are stale: run 'make generate' and commit the result" >&2
fi
exit ${status}
