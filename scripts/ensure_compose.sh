#!/usr/bin/env bash
# The compose test validates docker-compose.yml with `docker-compose config` (no engine needed).
# Debian's docker-compose package is installed when missing and apt is usable; otherwise the
# test says it was skipped.
set -u
if command -v docker-compose >/dev/null; then echo "compose: $(command -v docker-compose)"; exit 0; fi
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "docker-compose is missing: installing Debian's docker-compose package"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null 2>&1; }
fi
if command -v docker-compose >/dev/null; then
  echo "compose: $(command -v docker-compose)"
else
  echo "note: docker-compose is not installed; test_compose_config_is_valid will be skipped" >&2
fi
exit 0
