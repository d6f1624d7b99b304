#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (Playwright cannot download its own browser here).
set -u
CHROMIUM=${CROWDVL_CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then echo "browser: $CHROMIUM"; exit 0; fi
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "Chromium is missing: installing Debian's chromium package"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }
fi
[ -x "$CHROMIUM" ] || { echo "ERROR: no Chromium at $CHROMIUM. Install it (sudo apt-get install chromium) or set CROWDVL_CHROMIUM to a Chromium binary." >&2; exit 1; }
echo "browser: $CHROMIUM"
