#!/usr/bin/env bash
# hack/test-tiers.sh prints the Go packages of one test tier, one per line.
# Every package of the module is in exactly one tier, decided from its
# import path and its test files' imports, so a new package cannot fall
# out of `make test`:
#
#   e2e          packages under test/e2e: the full local control plane
#                (kube-apiserver, etcd, kube-scheduler,
#                kube-controller-manager, kwok) and karp's controller,
#                the seeded chaos suite (test/e2e/chaos) among them.
#   integration  packages whose tests start an API server: their test files
#                import one of the starters below (or the package is one);
#                and the packages in BUILDERS, whose tests build karp's
#                binaries (minutes on a loaded machine, not seconds).
#   unit         everything else: pure tests, no process started, seconds.
#
# A unit test that starts an API server anyway fails: `make test-unit` sets
# KARP_TEST_TIER=unit, and pkg/test/environment refuses to start under it.
#
# Usage: hack/test-tiers.sh unit|integration|e2e|all
#   all   prints "<tier> <package>" for every package.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

MODULE="github.com/karp-autoscaler/karp"
# The packages that start an API server (envtest, the local cluster) for the
# tests that import them.
STARTERS=(
  "${MODULE}/pkg/test/environment"
  "${MODULE}/pkg/test/controllertest"
  "${MODULE}/pkg/test/operatortest"
  "${MODULE}/pkg/localcluster"
  "sigs.k8s.io/controller-runtime/pkg/envtest"
)

# The packages whose tests run `go build` of karp's own binaries.
BUILDERS=(
  "${MODULE}/hack/image"
)

classify() {
  local starters=" ${STARTERS[*]} " builders=" ${BUILDERS[*]} "
  go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
    while read -r pkg imports; do
      local tier=unit imp
      if [[ "${pkg}" == "${MODULE}/test/e2e" || "${pkg}" == "${MODULE}/test/e2e/"* ]]; then
        tier=e2e
      elif [[ "${builders}" == *" ${pkg} "* ]]; then
        tier=integration
      else
        for imp in ${imports}; do
          if [[ "${starters}" == *" ${imp} "* ]]; then
            tier=integration
            break
          fi
        done
      fi
      echo "${tier} ${pkg}"
    done
}

case "${1:-}" in
  unit | integration | e2e)
    classify | awk -v tier="$1" '$1 == tier { print $2 }'
    ;;
  all)
    classify
    ;;
  *)
    echo "usage: $0 unit|integration|e2e|all" >&2
    exit 2
    ;;
esac
