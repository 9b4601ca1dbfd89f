#!/usr/bin/env bash
# hack/test.sh is `make test`: the make targets verify, then e2e beside
# test-unit and test-integration. It prints how long each took, on one line
# at the end (also after a failure), with the CPU seconds each used, so a CI
# log shows where the minutes went.
#
# verify runs first and alone: a lint or generated-code failure ends the run
# in seconds. The e2e tier then starts at once: it is the longest (14 minutes
# on two cores) and mostly waits, on its local clusters' timers, at about one
# core of the two. The unit and integration tiers run beside it, one after
# the other, at a lower CPU priority (nice), so they take the cores the e2e
# tier leaves idle rather than slowing its timers: the integration tier
# alone keeps both cores busy for about six minutes. Both sides run to their
# end; the run fails if either failed.
set -euo pipefail

MAKE="${MAKE:-make}"
times=()
report() { echo "make test: ${times[*]:-nothing finished}"; }

# children_cpu sets cpu to the CPU seconds (user + system) of this shell's
# finished children and everything they waited for, from bash's times (run
# in this shell: in a command substitution or a pipeline it would count a
# subshell's children, none).
cpu_file=$(mktemp)
cpu=0
trap 'rm -f "${cpu_file}"; report' EXIT
children_cpu() {
  times >"${cpu_file}"
  cpu=$(tail -1 "${cpu_file}" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); sub("s", "", t[2]); s += t[1] * 60 + t[2] } printf "%d", s }')
}

# target runs one make target and appends its wall time and CPU (and a
# failure) to times.
target() {
  local name=$1 start cpu_before status=0
  shift
  start=$(date +%s)
  children_cpu
  cpu_before=${cpu}
  "$@" "${MAKE}" --no-print-directory "${name}" || status=$?
  children_cpu
  times+=("${name}=$(($(date +%s) - start))s/$((cpu - cpu_before))cpu-s")
  if [[ ${status} -ne 0 ]]; then
    times+=("(${name} failed)")
  fi
  return "${status}"
}

start=$(date +%s)
target verify || exit
# Both sides need the control plane's binaries and karp's: built once here,
# not by two makes at once.
target tools || exit
target build || exit

state=$(mktemp -d)
trap 'rm -rf "${state}" "${cpu_file}"; report' EXIT
(
  e2e_start=$(date +%s) status=0
  children_cpu
  e2e_cpu=${cpu}
  "${MAKE}" --no-print-directory e2e || status=$?
  children_cpu
  echo "e2e=$(($(date +%s) - e2e_start))s/$((cpu - e2e_cpu))cpu-s" >"${state}/e2e.time"
  exit "${status}"
) &
e2e=$!

side=0
target test-unit nice -n 10 && target test-integration nice -n 10 || side=$?

e2e_status=0
wait "${e2e}" || e2e_status=$?
times+=("$(cat "${state}/e2e.time" 2>/dev/null || echo 'e2e=?')")
if [[ ${e2e_status} -ne 0 ]]; then
  times+=("(e2e failed)")
fi
children_cpu
times+=("total=$(($(date +%s) - start))s/${cpu}cpu-s")
if [[ ${side} -ne 0 ]]; then
  exit "${side}"
fi
exit "${e2e_status}"
