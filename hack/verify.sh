#!/usr/bin/env bash
# hack/verify.sh fails when the generated files under pkg/apis are stale:
# it regenerates the deepcopy functions and the CRDs into a temporary
# directory and diffs them against the committed ones. It never writes into
# the working tree, so it is safe to run while others edit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

# CRDs (installs the pinned controller-gen if needed).
hack/generate.sh "${TMP}/crds"

CONTROLLER_GEN="${ROOT}/bin/controller-gen-v0.21.0/controller-gen"
status=0
for pkg in v1 kwok/v1alpha1 aws/v1; do
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

if [[ ${status} -ne 0 ]]; then
  echo "generated files are stale: run 'make generate' and commit the result" >&2
fi
exit ${status}
