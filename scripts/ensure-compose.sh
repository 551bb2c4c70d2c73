#!/usr/bin/env bash
# Makes `docker compose` available without root.
#
# If `docker compose version` already works, nothing is built. Otherwise the Compose CLI
# plugin is built from the Go module proxy into the project-local, git-ignored
#   .tools/docker/cli-plugins/docker-compose
# (needs Go; about a minute with a warm module cache, longer on a fresh machine).
#
# stdout: one line, DOCKER_CONFIG=<dir>, the Docker config folder whose cli-plugins holds a
# working compose. Use it as:   export "$(scripts/ensure-compose.sh)"
# Progress and errors go to stderr.
#
# Environment: COMPOSE_MODULE (default github.com/docker/compose/v5),
#              COMPOSE_VERSION (default v5.6.0), FORCE_BUILD=1 to rebuild the local plugin.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMPOSE_MODULE=${COMPOSE_MODULE:-github.com/docker/compose/v5}
COMPOSE_VERSION=${COMPOSE_VERSION:-v5.6.0}
LOCAL_CONFIG="$ROOT/.tools/docker"
PLUGIN="$LOCAL_CONFIG/cli-plugins/docker-compose"

log() { echo "[ensure-compose] $*" >&2; }
die() { log "error: $*"; exit 1; }

# Does compose run with this Docker config folder? Through the docker CLI when there is one,
# else the local binary alone (a compose plugin also runs standalone, as `docker-compose`).
works_with() {
  if command -v docker >/dev/null 2>&1; then
    DOCKER_CONFIG="$1" docker compose version >/dev/null 2>&1
  else
    [ "$1" = "$LOCAL_CONFIG" ] && [ -x "$PLUGIN" ] && "$PLUGIN" version >/dev/null 2>&1
  fi
}

current_config=${DOCKER_CONFIG:-$HOME/.docker}
if [ "${FORCE_BUILD:-0}" != 1 ]; then
  if works_with "$current_config"; then
    log "docker compose works as is (DOCKER_CONFIG=$current_config)"
    echo "DOCKER_CONFIG=$current_config"
    exit 0
  fi
  if works_with "$LOCAL_CONFIG"; then
    log "using the project-local plugin $PLUGIN"
    echo "DOCKER_CONFIG=$LOCAL_CONFIG"
    exit 0
  fi
fi

command -v go >/dev/null 2>&1 || die "docker compose is not available and Go is not installed to build it"
log "building $COMPOSE_MODULE@$COMPOSE_VERSION into $PLUGIN (go $(go env GOVERSION))"

json=$(go mod download -json "$COMPOSE_MODULE@$COMPOSE_VERSION") || die "go mod download failed: $json"
src=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -n "$src" ] && [ -d "$src" ] || die "no module folder in: $json"

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# The module cache is read-only; build from a writable copy.
cp -R "$src/." "$work/"
chmod -R u+w "$work"
mkdir -p "$(dirname "$PLUGIN")"
(
  cd "$work"
  go build -trimpath -ldflags "-s -w -X $COMPOSE_MODULE/internal.Version=$COMPOSE_VERSION" -o "$PLUGIN.tmp" ./cmd
) || die "go build failed (the module's go.mod may need a newer Go: try GOTOOLCHAIN=auto)"
mv -f "$PLUGIN.tmp" "$PLUGIN"
chmod 755 "$PLUGIN"

works_with "$LOCAL_CONFIG" || die "built $PLUGIN but it does not run"
log "built $("$PLUGIN" version)"
echo "DOCKER_CONFIG=$LOCAL_CONFIG"
