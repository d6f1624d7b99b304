"""The shared cache's operations on the app's backend (django-redis) against Django's own
`RedisCache` and a bare redis-py client kept by the caller, on the same Redis server.

With CROWDVL_CACHE_URL set, every worker page reads the worker's session from the shared cache
(`cached_db`), and rate limits count there. Django's `RedisCache` builds a redis-py client for
each operation (redis-py 8 fills a dict of ~170 response callbacks each time); django-redis
keeps one per process. Each operation runs in alternated blocks on each backend; the table gives
the thread CPU per operation (Redis's own work not counted), its median over blocks and the ratio
to Django's backend:

- session read: `get` of a worker's session dict, what `cached_db`'s load does;
- rate count: `add` then `incr` of a counter (`annotation/ratelimit.py`);
- HIT view: `get` of a 6 kB pickled dict (`selectors/work/hit_cache.py`'s shared level).

    .venv/bin/python benchmarks/cache_backend.py [--cache-url redis://127.0.0.1:6379/13]
        [--blocks 15] [--operations 1000]

Keys are written under a prefix of the run's own and deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import results_argument, results_tee  # noqa: E402

BACKENDS = {
    "django-redis (the app's)": "django_redis.cache.RedisCache",
    "Django's RedisCache": "django.core.cache.backends.redis.RedisCache",
}
BASELINE = "Django's RedisCache"
RAW = "redis-py client kept (floor)"


def per_operation(operation: Callable[[], object], n: int) -> float:
    """Thread CPU seconds per call of `n` calls."""
    started = time.thread_time()
    for _ in range(n):
        operation()
    return (time.thread_time() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-url", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--operations", type=int, default=1000, help="operations per block")
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)
    prefix = f"bench-{secrets.token_hex(4)}"
    from django.conf import settings

    settings.configure(
        CACHES={
            name: {"BACKEND": backend, "LOCATION": args.cache_url, "KEY_PREFIX": prefix}
            for name, backend in BACKENDS.items()
        }
    )
    import django

    django.setup()
    import pickle

    import redis
    from django.core.cache import caches

    session = {"_session_expiry": 1209600, "crowdvl_worker": 123456, "consent": "v3"}
    view = {"questions": [{"key": f"q{i}", "text": "a caption " * 20} for i in range(30)]}
    raw = redis.Redis.from_url(args.cache_url)
    raw_key = f"{prefix}:raw"
    raw.set(raw_key, pickle.dumps(session), ex=600)

    def operations(cache) -> dict[str, Callable[[], object]]:  # type: ignore[no-untyped-def]
        cache.set("session", session, 600)
        cache.set("view", view, 600)

        def count() -> None:
            cache.add("counter", 0, timeout=120)
            cache.incr("counter")

        return {
            "session read": lambda: cache.get("session"),
            "rate count": count,
            "HIT view": lambda: cache.get("view"),
        }

    ways = {name: operations(caches[name]) for name in BACKENDS}
    ways[RAW] = {"session read": lambda: pickle.loads(raw.get(raw_key))}  # type: ignore[arg-type]
    for way in ways.values():  # warm: connections made, code paths loaded
        for operation in way.values():
            per_operation(operation, 200)
    blocks: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.blocks):
            for name, way in ways.items():
                for op_name, operation in way.items():
                    blocks.setdefault((name, op_name), []).append(
                        per_operation(operation, args.operations)
                    )
    finally:
        for name in BACKENDS:
            caches[name].delete_many(["session", "view", "counter"])
        raw.delete(raw_key)

    print(
        f"shared cache operations, {args.blocks} blocks x {args.operations} operations each way, "
        f"alternated; thread CPU per operation (Redis's own not counted); {args.cache_url}"
    )
    print()
    print(f"{'operation':<14}{'backend':<32}{'median us':>11}{'q1 us':>9}{'q3 us':>9}{'ratio':>8}")
    for op_name in ("session read", "rate count", "HIT view"):
        base = statistics.median(blocks[(BASELINE, op_name)])
        for name in ways:
            values = blocks.get((name, op_name))
            if values is None:
                continue
            q1, _, q3 = statistics.quantiles(values)
            median = statistics.median(values)
            print(
                f"{op_name:<14}{name:<32}{1e6 * median:>11.1f}{1e6 * q1:>9.1f}{1e6 * q3:>9.1f}"
                f"{median / base:>7.2f}x"
            )
    print()
    print(f"load average (1, 5, 15 min) {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
