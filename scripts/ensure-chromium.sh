#!/usr/bin/env bash
# The browser the console's end-to-end tests drive (npm run test:browser): Debian's Chromium at /usr/bin/chromium,
# installed with apt-get when missing. Playwright's own browser downloads are never used (`npx playwright install`
# fetches from the network at test time; the distribution's package is installed once, like any system tool).
# Prints the version it found or installed; exits non-zero, saying why, when it can do neither.
set -euo pipefail

CHROMIUM=${ELMA_CHROMIUM:-/usr/bin/chromium}

if [ -x "$CHROMIUM" ]; then
  "$CHROMIUM" --version 2>/dev/null || echo "chromium at $CHROMIUM"
  exit 0
fi

if [ "$CHROMIUM" != /usr/bin/chromium ]; then
  echo "ensure-chromium: ELMA_CHROMIUM=$CHROMIUM is not an executable file" >&2
  exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "ensure-chromium: /usr/bin/chromium is missing and installing it needs root (or password-less sudo):" >&2
  echo "  apt-get update && apt-get install -y chromium" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "ensure-chromium: /usr/bin/chromium is missing and this system has no apt-get; install Chromium and set ELMA_CHROMIUM" >&2
  exit 1
fi

echo "ensure-chromium: installing Debian's chromium package"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
"$CHROMIUM" --version
