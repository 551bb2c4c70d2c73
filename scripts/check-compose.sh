#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine: `docker compose config --quiet`
# (schema, interpolation, depends_on targets...), then lists the services it defines.
# Exits non-zero on an invalid file. Gets compose through scripts/ensure-compose.sh
# (builds a project-local plugin when `docker compose` is missing).
#
#   scripts/check-compose.sh [compose-file]     # default: docker-compose.yml at the repo root
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FILE=${1:-$ROOT/docker-compose.yml}
[ -f "$FILE" ] || { echo "check-compose: no such file: $FILE" >&2; exit 2; }

config_line=$("$ROOT/scripts/ensure-compose.sh")   # DOCKER_CONFIG=...; exits here if that fails
export "$config_line"
if command -v docker >/dev/null 2>&1; then
  compose() { docker compose "$@"; }
else
  compose() { "$DOCKER_CONFIG/cli-plugins/docker-compose" "$@"; }
fi

# The file requires ELMA_MASTER_KEY (never stored in it); a dummy is enough to validate.
export ELMA_MASTER_KEY=${ELMA_MASTER_KEY:-0000000000000000000000000000000000000000000000000000000000000000}

echo "== $(compose version) (DOCKER_CONFIG=$DOCKER_CONFIG)"
if ! compose -f "$FILE" config --quiet; then
  echo "check-compose: $FILE is invalid" >&2
  exit 1
fi
echo "== $FILE is valid; services:"
compose -f "$FILE" config --services
