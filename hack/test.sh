#!/usr/bin/env bash
# hack/test.sh is `make test`: the make targets verify, test-unit,
# test-integration and e2e, in that order, stopping at the first that
# fails. It prints how long each took, on one line at the end (also after
# a failure), so a CI log shows where the minutes went.
set -euo pipefail

MAKE="${MAKE:-make}"
times=()
report() { echo "make test: ${times[*]:-nothing finished}"; }
trap report EXIT

for target in verify test-unit test-integration e2e; do
  start=$(date +%s)
  status=0
  "${MAKE}" --no-print-directory "${target}" || status=$?
  times+=("${target}=$(($(date +%s) - start))s")
  if [[ ${status} -ne 0 ]]; then
    times+=("(${target} failed)")
    exit "${status}"
  fi
done
