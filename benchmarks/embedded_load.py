"""The embedded default under a small lab's load: the worker cycle (claim, render, the page's
images, submit) with 10 concurrent workers, served as `make serve` serves it (`manage.py serve`:
Django's threaded development server, DEBUG on, no shared cache; no Celery worker, which the
cycle does not use), on SQLite (the embedded file: WAL, immediate
transactions, a writer waits for the lock) against PostgreSQL, in the same run.

Both databases are built alike (`worker_load.build`: a BISON stage-2 batch of local HITs and
invited workers), both servers run at once, and the rounds alternate between them (the order
swapped each round) so drift hits both alike. Errors are any answer other than the expected
200/302, the "database is locked" a writer would meet included.

    .venv/bin/python benchmarks/embedded_load.py [--clients 10] [--seconds 10] [--rounds 4]
        [--images 300] [--database-url postgres://postgres@127.0.0.1:5432/postgres]

A PostgreSQL database named crowdvl_bench_embedded is created and dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import worker_load as load  # noqa: E402
from benchmarks.harness import results_argument, results_tee  # noqa: E402

DB = "crowdvl_bench_embedded"
BACKENDS = ("sqlite", "postgres")
ERRORS: dict[str, Counter[str]] = {b: Counter() for b in BACKENDS}  # unexpected answers, by step


def backend_env(backend: str, folder: Path, server_url: str) -> dict[str, str]:
    """The environment of the embedded default (`make serve`), with the database chosen."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "1",
        "CROWDVL_VAR_DIR": str(folder / "var"),
        "CROWDVL_MEDIA_ROOT": str(folder / "media"),
        "CELERY_BROKER_URL": "",  # the setup runs its jobs in-process
        "CROWDVL_CACHE_URL": "",
        "CROWDVL_IMAGE_DIRS": str(folder),  # the generated images' folder
        "PYTHONPATH": str(ROOT),
    }
    for name in ("DATABASE_URL", "TEST_DATABASE_NAME"):
        env.pop(name, None)
    if backend == "postgres":
        env["DATABASE_URL"] = server_url.rsplit("/", 1)[0] + "/" + DB
    return env  # no DATABASE_URL: the embedded SQLite file under CROWDVL_VAR_DIR


def setup_child(images: int, clients: int, folder: Path) -> None:
    """Runs in its own interpreter (the backend's settings): builds, prints the setup."""
    import django

    django.setup()
    setup = load.build(images, clients, folder)
    from django.conf import settings

    setup["engine"] = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print("SETUP " + json.dumps(setup))


def build(backend: str, args: argparse.Namespace, folder: Path) -> dict:
    folder.mkdir(parents=True)
    (folder / "var").mkdir()
    env = backend_env(backend, folder, args.database_url)
    out = subprocess.run(
        [sys.executable, __file__, "--setup", str(folder), "--images", str(args.images)]
        + ["--clients", str(args.clients)],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("SETUP "))
    return {"setup": json.loads(line[len("SETUP ") :]), "env": env}


def serve(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, int]:
    """The development server as `manage.py serve` starts it; its output goes to `log`."""
    port = load.free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--no-worker"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, port
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the development server did not start")


async def cycle_phase(
    backend: str, port: int, setup: dict, workers: list, seconds: float
) -> load.Phase:
    http = load.Http(port)
    batch = setup["batch"]

    def expect(phase: load.Phase, step: str, status: int, wanted: int) -> None:
        if status != wanted:
            phase.errors += 1
            ERRORS[backend][f"{step} {status}"] += 1

    async def cycle(phase: load.Phase, worker: load.Worker) -> bool:
        started = time.perf_counter()
        claim = await load.timed(
            phase, "claim", http.request("GET", f"/work/{batch}/next/", worker)
        )
        if claim.status != 302:
            expect(phase, "claim", claim.status, 200)  # 200: a page saying no work is left
            return False
        url = claim.headers["location"][0]
        page = await load.timed(phase, "render", http.request("GET", url, worker))
        form = load.parse_form(page.body.decode())
        for src in form.images:
            image = await load.timed(phase, "image", http.request("GET", src, worker))
            expect(phase, "image", image.status, 200)
        done = await load.timed(phase, "submit", http.request("POST", url, worker, form.answers))
        expect(phase, "render", page.status, 200)
        expect(phase, "submit", done.status, 302)
        phase.latency.setdefault("cycle", []).append(time.perf_counter() - started)
        phase.cycles += 1
        return True

    return await load.run_phase("cycle", seconds, cycle, workers)


async def drive(servers: dict[str, tuple[int, dict]], args: argparse.Namespace) -> dict:
    workers: dict[str, list] = {}
    for backend, (port, setup) in servers.items():
        http = load.Http(port)
        workers[backend] = [load.Worker() for _ in setup["tokens"]]
        for worker, token in zip(workers[backend], setup["tokens"], strict=True):
            assert (await http.request("GET", f"/join/{token}/", worker)).status == 200
        await cycle_phase(backend, port, setup, workers[backend], 2)  # warm-up
    rounds: dict[str, list[load.Phase]] = {b: [] for b in servers}
    for n in range(args.rounds):
        order = list(servers) if n % 2 == 0 else list(reversed(servers))
        for backend in order:
            port, setup = servers[backend]
            phase = await cycle_phase(backend, port, setup, workers[backend], args.seconds)
            rounds[backend].append(phase)
    return rounds


def report(rounds: dict[str, list[load.Phase]], args: argparse.Namespace, setups: dict) -> None:
    first = setups["sqlite"]
    print(
        f"embedded default as `make serve` runs it (Django's threaded development server, DEBUG "
        f"on, no shared cache); {args.clients} concurrent workers, {args.rounds} rounds x "
        f"{args.seconds:.0f} s, alternating; a batch of {len(first['hits'])} HITs x 10 pairs "
        f"({first['slots']} assignments) on each database; load {os.getloadavg()[0]:.1f}"
    )
    print()
    print(f"{'database':<24}{'cycles/s':>10}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'errors':>8}")
    per_round = {b: [p.cycles / p.seconds for p in rounds[b]] for b in rounds}
    for backend, phases in rounds.items():
        merged = load._merged([[p] for p in phases])[0]
        cycle = merged.latency.get("cycle", [0.0])
        print(
            f"{backend + ' (' + setups[backend]['engine'] + ')':<24}"
            f"{statistics.median(per_round[backend]):>10.2f}"
            f"{merged.requests / merged.seconds:>8.1f}{load.pct(cycle, 0.5):>8.1f}"
            f"{load.pct(cycle, 0.99):>8.1f}{merged.errors:>8}"
        )
    for backend, counts in ERRORS.items():
        if counts:
            print(f"{backend} errors by step and status: {dict(counts)}")
    ratios = [s / p for s, p in zip(per_round["sqlite"], per_round["postgres"], strict=True)]
    print()
    print(
        f"SQLite cycles/s / PostgreSQL's: {statistics.median(ratios):.2f}x, median of rounds "
        f"[{', '.join(f'{r:.2f}' for r in ratios)}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--setup", help=argparse.SUPPRESS)  # the child that builds one database
    results_argument(parser, __file__)
    args = parser.parse_args()
    if args.setup:
        setup_child(args.images, args.clients, Path(args.setup))
        return
    results_tee(args.results)
    load.DB = DB  # worker_load's database helpers, on this benchmark's database
    load.create_database(args.database_url)
    folder = Path(tempfile.mkdtemp(prefix="crowdvl-embedded-"))
    servers: list[subprocess.Popen] = []
    try:
        built = {b: build(b, args, folder / b) for b in BACKENDS}
        ports = {}
        for backend in BACKENDS:
            server, port = serve(built[backend]["env"], folder / backend / "server.log")
            servers.append(server)
            ports[backend] = (port, built[backend]["setup"])
        rounds = load.run_loop(drive(ports, args))
        report(rounds, args, {b: built[b]["setup"] for b in BACKENDS})
        print(f"(the servers' logs: {folder}/<database>/server.log)")
    finally:
        for server in servers:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        load.drop_database(args.database_url)


if __name__ == "__main__":
    main()
