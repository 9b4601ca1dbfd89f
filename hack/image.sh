#!/usr/bin/env bash
# hack/image.sh builds the karp-controller container image without a
# container daemon: a static, reproducible binary (CGO_ENABLED=0,
# -trimpath, no build ID or VCS stamp) that reports the chart's appVersion
# and the source commit in karpenter_build_info and `--version`, and an OCI
# image layout around it written by hack/image, in
# ${KARP_BIN_DIR:-<repo>/bin}/image/karp-controller. Push it with crane or
# skopeo (docs/install.md).
#
# Environment: IMAGE_NAME (default: the chart's default repository),
# VERSION (default: the chart's appVersion), COMMIT (default: `git rev-parse
# HEAD`, else "unspecified" outside a git checkout), GOARCH (default: the host's),
# CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt; empty leaves the
# image without one), SOURCE_DATE_EPOCH (default 0).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
OUT="${KARP_BIN_DIR:-${ROOT}/bin}/image"
GO="${GO:-go}"

# The version and commit the binary reports are fixed for a given commit,
# so the build stays reproducible.
VERSION="${VERSION:-$(awk -F'"' '/^appVersion:/ {print $2}' charts/karp/Chart.yaml)}"
IMAGE_NAME="${IMAGE_NAME:-$(awk '/^    repository:/ {print $2; exit}' charts/karp/values.yaml)}"
GOARCH="${GOARCH:-$("${GO}" env GOARCH)}"
COMMIT="${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unspecified)}"
CA_BUNDLE="${CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}"
[[ -n "${VERSION}" && -n "${IMAGE_NAME}" ]] || { echo "image: cannot read the version or image name from charts/karp" >&2; exit 1; }

mkdir -p "${OUT}"
BINARY="${OUT}/karp-controller-linux-${GOARCH}"
METRICS_PKG=github.com/karp-autoscaler/karp/pkg/metrics
CGO_ENABLED=0 GOOS=linux GOARCH="${GOARCH}" GOFLAGS="-buildvcs=false" \
  "${GO}" build -trimpath -ldflags="-s -w -buildid= -X ${METRICS_PKG}.Version=${VERSION} -X ${METRICS_PKG}.Commit=${COMMIT}" \
  -o "${BINARY}" ./cmd/karp-controller
"${GO}" run ./hack/image --binary "${BINARY}" --out "${OUT}/karp-controller" \
  --name "${IMAGE_NAME}" --tag "${VERSION}" --arch "${GOARCH}" --ca-bundle "${CA_BUNDLE}"
