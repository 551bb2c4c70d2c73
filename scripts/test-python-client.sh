#!/usr/bin/env bash
# `npm run test:python [-- pytest arguments]`: the Python client's tests (clients/python) against a real ELMA that
# the tests start from this clone (elma start on free ports, its own Temporal dev server, a temporary data folder).
# Creates the project-local virtual environment clients/python/.venv (with $PYTHON, default python3; 3.9 or newer),
# installs the client into it with its test extra (again only when pyproject.toml changed), runs pytest, and ends
# with pytest's closing line as `pytest: N passed, M failed, ...`, which .ci/run counts. Exits with pytest's status
# (5 when no test ran).
set -uo pipefail
cd "$(dirname "$0")/.."

client=clients/python
venv=$client/.venv
python=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || {
    echo "test-python-client: could not create $venv with $python (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
fi
stamp=$(sha256sum "$client/pyproject.toml" | cut -d' ' -f1)
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$stamp" ]; then
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -e "$client[test]" || {
    echo "test-python-client: pip could not install $client[test]" >&2
    exit 1
  }
  echo "$stamp" >"$venv/.installed"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --durations: the 15 slowest steps (set-ups included), as every vitest run closes with its slowest files.
"$venv/bin/python" -m pytest "$client" -p no:cacheprovider --color=no --durations=15 "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# pytest's last line, e.g. `==== 1 failed, 20 passed, 3 skipped in 61.2s ====`, without its rulers.
summary=$(grep -E '^=+ .* in [0-9.]+s' "$log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')
echo "pytest: ${summary:-no closing line (exit $status)}"
exit "$status"
