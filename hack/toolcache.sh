# hack/toolcache.sh (sourced) keeps the tool binaries karp's scripts build
# from pinned modules (the control plane, golangci-lint, controller-gen) in
# a cache shared by every checkout of the repository:
# ${KARP_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/karp/tools}/<entry>, where an
# entry is "<tool>-<key>" and the key hashes every input of the build. A
# fresh clone then takes each tool as a hard link instead of linking it
# again (the largest, six control plane binaries, cost about 20 s and
# 36 CPU-s on two cores). Only the newest entry of each tool is kept.

TOOLCACHE="${KARP_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/karp/tools}"

# toolcache_get ENTRY DEST NAME... puts the entry's binaries NAME... into
# the directory DEST (hard links, or copies across file systems). It fails,
# having written nothing under those names, unless the entry has them all.
toolcache_get() {
  local entry="$1" dest="$2" name
  shift 2
  for name in "$@"; do
    [[ -x "${TOOLCACHE}/${entry}/${name}" ]] || return 1
  done
  mkdir -p "${dest}" || return 1
  for name in "$@"; do
    ln -f "${TOOLCACHE}/${entry}/${name}" "${dest}/.${name}.cached" 2>/dev/null ||
      cp -f "${TOOLCACHE}/${entry}/${name}" "${dest}/.${name}.cached" || return 1
  done
  for name in "$@"; do
    mv -f "${dest}/.${name}.cached" "${dest}/${name}" || return 1
  done
}

# toolcache_put ENTRY SRC NAME... stores the binaries NAME... of the
# directory SRC as the entry, whole or not at all (filled under a temporary
# name, then renamed), and removes the tool's other entries. A failure only
# costs the next checkout a build.
toolcache_put() {
  local entry="$1" src="$2" tmp name old
  shift 2
  mkdir -p "${TOOLCACHE}" 2>/dev/null || return 0
  if [[ ! -d "${TOOLCACHE}/${entry}" ]]; then
    tmp="$(mktemp -d "${TOOLCACHE}/.fill.XXXXXX")" || return 0
    chmod 755 "${tmp}"
    for name in "$@"; do
      ln -f "${src}/${name}" "${tmp}/${name}" 2>/dev/null || cp -f "${src}/${name}" "${tmp}/${name}" || {
        rm -rf "${tmp}"
        return 0
      }
    done
    mv -T "${tmp}" "${TOOLCACHE}/${entry}" 2>/dev/null || rm -rf "${tmp}"
  fi
  for old in "${TOOLCACHE}/${entry%-*}"-*; do
    [[ "${old}" == "${TOOLCACHE}/${entry}" ]] || rm -rf "${old}"
  done
}

# toolcache_drop ENTRY removes an entry whose binaries do not run.
toolcache_drop() {
  rm -rf "${TOOLCACHE:?}/$1"
}
