#!/usr/bin/env bash
# hack/lint.sh runs golangci-lint over the module with the configuration in
# .golangci.yml. golangci-lint is built from the Go module pinned in
# hack/tools/lint (its own module, so its dependencies never mix with the
# control plane tools in hack/tools or with karp's go.mod) into
# bin/golangci-lint-<key>/, where the key hashes that go.mod, go.sum and
# `go version`. A second run with the same key reuses the binary, and a
# fresh clone takes it from the tool cache every checkout shares
# (hack/toolcache.sh).
#
# Usage: hack/lint.sh [golangci-lint run arguments]
#   hack/lint.sh                 lint ./...
#   hack/lint.sh ./pkg/state/... lint one tree
#   hack/lint.sh --fmt           rewrite files with the configured formatters
#   hack/lint.sh --build-only    build the binary and print its path
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/hack/tools/lint"
GO="${GO:-go}"
# shellcheck source=hack/toolcache.sh
source "${ROOT}/hack/toolcache.sh"

key="$({
  "${GO}" version
  cat "${TOOLS}/go.mod" "${TOOLS}/go.sum"
} | sha256sum | cut -c1-16)"
DIR="${KARP_BIN_DIR:-${ROOT}/bin}/golangci-lint-${key}"
LINT="${DIR}/golangci-lint"

if [[ ! -x "${LINT}" ]] && toolcache_get "golangci-lint-${key}" "${DIR}" golangci-lint; then
  echo "lint: golangci-lint taken from ${TOOLCACHE}/golangci-lint-${key}" >&2
fi
if [[ ! -x "${LINT}" ]]; then
  echo "lint: building golangci-lint from hack/tools/lint into ${DIR} (several minutes from a cold cache)" >&2
  mkdir -p "${DIR}"
  (
    cd "${TOOLS}"
    GOWORK=off GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0 \
      "${GO}" build -trimpath -o "${LINT}.tmp" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  )
  mv -f "${LINT}.tmp" "${LINT}"
  toolcache_put "golangci-lint-${key}" "${DIR}" golangci-lint
fi

if [[ "${1:-}" == "--build-only" ]]; then
  echo "${LINT}"
  exit 0
fi

cd "${ROOT}"
if [[ "${1:-}" == "--fmt" ]]; then
  shift
  exec "${LINT}" fmt --config "${ROOT}/.golangci.yml" "$@"
fi
if [[ $# -eq 0 ]]; then
  set -- ./...
fi
exec "${LINT}" run --config "${ROOT}/.golangci.yml" "$@"
