#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on localhost; start them if installed but down.
set -u
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    echo "PostgreSQL is down: starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  pg_up || { echo "ERROR: PostgreSQL is not reachable on 127.0.0.1:5432. Install it (apt-get install postgresql) and start it, or run 'docker compose up -d db redis'." >&2; exit 1; }
fi

if ! redis_up; then
  if command -v redis-server >/dev/null; then
    echo "Redis is down: starting it"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no || true
    for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  fi
  redis_up || { echo "ERROR: Redis is not reachable on 127.0.0.1:6379. Install it (apt-get install redis-server) and start it, or run 'docker compose up -d redis'." >&2; exit 1; }
fi
echo "services: PostgreSQL and Redis are up"
