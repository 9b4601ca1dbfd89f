#!/usr/bin/env bash
# build-tools.sh builds the local control plane binaries from the pinned Go
# modules in hack/tools (no prebuilt downloads): etcd, kube-apiserver,
# kube-scheduler, kube-controller-manager, kubectl and kwok, into
# ${KARP_BIN_DIR:-<repo>/bin}/k8s.
#
# The build is keyed by a hash of hack/tools/go.mod, go.sum, the etcd main,
# the build recipe below and `go version`; the hash is stored as a stamp file
# beside the binaries. A second run with the same key is a no-op, so `make
# test` and the test harness can call it freely. Concurrent callers (parallel
# test packages) serialise on a lock file and the loser sees a fresh stamp.
#
# The binaries of each key are also kept in the tool cache every checkout
# shares (hack/toolcache.sh), so a fresh clone takes them from there
# instead of linking them again.
#
# Usage: hack/build-tools.sh [--check]
#   --check   exit 0 if the binaries are up to date, 1 otherwise; build nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/hack/tools"
OUT="${KARP_BIN_DIR:-${ROOT}/bin}/k8s"
GO="${GO:-go}"
# shellcheck source=hack/toolcache.sh
source "${ROOT}/hack/toolcache.sh"

# Bump RECIPE when the flags or the list below change, to force a rebuild.
RECIPE="v1"
K8S_VERSION="v1.36.3"
K8S_PKGS=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-scheduler
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kubectl
)
OTHER_PKGS=(
  sigs.k8s.io/kwok/cmd/kwok
  ./etcd
)
BINARIES=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok)

stamp_key() {
  {
    echo "recipe ${RECIPE} ${K8S_VERSION}"
    "${GO}" version
    cat "${TOOLS}/go.mod" "${TOOLS}/go.sum" "${TOOLS}/etcd/main.go"
  } | sha256sum | cut -d' ' -f1
}

up_to_date() {
  local key="$1" bin
  [[ -f "${OUT}/.stamp" && "$(cat "${OUT}/.stamp")" == "${key}" ]] || return 1
  for bin in "${BINARIES[@]}"; do
    [[ -x "${OUT}/${bin}" ]] || return 1
  done
}

verify() {
  "${OUT}/etcd" --version >/dev/null
  "${OUT}/kube-apiserver" --version >/dev/null
  "${OUT}/kube-scheduler" --version >/dev/null
  "${OUT}/kube-controller-manager" --version >/dev/null
  "${OUT}/kubectl" version --client >/dev/null
  "${OUT}/kwok" --version >/dev/null
}

main() {
  local key
  key="$(stamp_key)"
  if [[ "${1:-}" == "--check" ]]; then
    up_to_date "${key}"
    return
  fi
  mkdir -p "${OUT}"
  exec 9>"${OUT}/.lock"
  flock 9
  if up_to_date "${key}"; then
    return 0
  fi

  # The key fixes every input of the build: a cached set is the binaries
  # this build would make. Checked like a build's before the stamp goes.
  if toolcache_get "k8s-${key}" "${OUT}" "${BINARIES[@]}"; then
    if verify 2>/dev/null; then
      echo "${key}" >"${OUT}/.stamp"
      echo "build-tools: control plane binaries taken from ${TOOLCACHE}/k8s-${key}" >&2
      return 0
    fi
    echo "build-tools: the cached binaries in ${TOOLCACHE}/k8s-${key} do not run; building them again" >&2
    toolcache_drop "k8s-${key}"
  fi

  echo "build-tools: building control plane binaries into ${OUT} (several minutes from a cold cache)" >&2
  local start tmp ver
  start="$(date +%s)"
  tmp="$(mktemp -d "${OUT}/.build.XXXXXX")"
  trap "rm -rf '${tmp}'" EXIT
  ver="k8s.io/component-base/version"
  local k8s_ldflags="-s -w -X ${ver}.gitVersion=${K8S_VERSION} -X ${ver}.gitMajor=1 -X ${ver}.gitMinor=36 -X ${ver}.gitTreeState=clean"

  (
    cd "${TOOLS}"
    export GOWORK=off GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0
    "${GO}" build -trimpath -ldflags="${k8s_ldflags}" -o "${tmp}/" "${K8S_PKGS[@]}"
    "${GO}" build -trimpath -ldflags="-s -w" -o "${tmp}/" "${OTHER_PKGS[@]}"
  )
  for bin in "${BINARIES[@]}"; do
    mv -f "${tmp}/${bin}" "${OUT}/${bin}"
  done
  verify
  echo "${key}" >"${OUT}/.stamp"
  toolcache_put "k8s-${key}" "${OUT}" "${BINARIES[@]}"
  echo "build-tools: done in $(($(date +%s) - start))s" >&2
}

main "$@"
