#!/usr/bin/env bash
# hack/test.sh is `make test`: the make targets verify, tools, build and
# test-unit, with test-integration beside them from tools on, then e2e. It
# prints how long each took, on one line at the end (also after a failure),
# with the CPU seconds each used, so a CI log shows where the minutes went.
#
# verify runs first and alone: a lint or generated-code failure ends the run
# in seconds. Once the control plane's binaries are there, the integration
# tier starts in the background at a lower CPU priority (nice); karp's
# binaries link and the unit tier runs (about a minute) in front of it. The
# e2e tier then starts: it mostly waits, on its local clusters' timers, at
# about one core of the two, and the integration tier takes the core it
# leaves idle rather than slowing its timers. Both run to their end; the
# run fails if any step failed.
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
# Both tiers that start servers need the control plane's binaries: built
# (or taken from the tool cache) once here, not by two makes at once.
target tools || exit

state=$(mktemp -d)
trap 'rm -rf "${state}" "${cpu_file}"; report' EXIT

# side starts one make target in the background, in a subshell that writes
# its time and CPU to the state directory (the CPU a finished background
# job used would otherwise count for whichever target was running then).
side() {
  local name=$1
  shift
  (
    local start status=0 cpu_before
    start=$(date +%s)
    children_cpu
    cpu_before=${cpu}
    "$@" "${MAKE}" --no-print-directory "${name}" || status=$?
    children_cpu
    echo "${name}=$(($(date +%s) - start))s/$((cpu - cpu_before))cpu-s" >"${state}/${name}.time"
    exit "${status}"
  ) &
}

# The integration tier needs nothing more, and it is the longest: it starts
# now, at its lower priority, while karp's binaries link and the unit tier
# runs in front of it.
side test-integration nice -n 10
jobs_started=("test-integration:$!")

status=0
target build || status=$?
if [[ ${status} -eq 0 ]]; then
  target test-unit || status=$?
fi
if [[ ${status} -eq 0 ]]; then
  side e2e
  jobs_started+=("e2e:$!")
fi

# Every tier started runs to its end (a failure above still waits for the
# integration tier: nothing is left running after make test).
for job in "${jobs_started[@]}"; do
  name=${job%:*} job_status=0
  wait "${job#*:}" || job_status=$?
  times+=("$(cat "${state}/${name}.time" 2>/dev/null || echo "${name}=?")")
  if [[ ${job_status} -ne 0 ]]; then
    times+=("(${name} failed)")
    status=${job_status}
  fi
done
children_cpu
times+=("total=$(($(date +%s) - start))s/${cpu}cpu-s")
exit "${status}"
