#!/usr/bin/env python3
"""A COCO-BISON run end to end through the REST API only (no manage.py, no database access):
upload a COCO captions file, create a run, pair images (stage 1), launch stage 2 and stage 3,
let workers answer, export, download the files.

    python scripts/api_bison_run.py --url http://127.0.0.1:8000 --token KEY \
        [--captions data/sample/coco_captions_val2014.subset.json] \
        [--provider local|simulated] [--out bison-export]

The token comes from `manage.py api_token <user>` (or CROWDVL_API_TOKEN); the user must be a
researcher of the project (`--project`, its id or name; default: the Default project, as the
API chooses), which the script checks before it imports anything. With `--provider local` the script
invites `--invite` people (one link each, printed) and waits until they have finished each
stage; `simulated` lets the server's simulated crowd answer at once, which the server offers
only with DJANGO_DEBUG=1 (its work is marked simulated in every export). Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "coco_captions_val2014.subset.json"
DONE = ("succeeded", "failed", "cancelled")
MAX_SIMULATED = 100  # the simulate operation's limit


class ApiError(RuntimeError):
    pass


class Api:
    def __init__(self, url: str, token: str, *, log: Any = print) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.log = log

    def call(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        *,
        files: dict[str, Path] | None = None,
        raw: bool = False,
    ) -> Any:
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        data = None
        if files:
            data, headers["Content-Type"] = _multipart(body or {}, files)
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        url = path if path.startswith("http") else f"{self.url}{path}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):  # not a JSON error body
                detail = json.loads(detail).get("error", detail)
            raise ApiError(f"{method} {path}: HTTP {exc.code}: {detail}") from None
        if raw:
            return payload
        return json.loads(payload) if payload else None

    def wait_job(self, job: dict, *, timeout: float, poll: float) -> dict:
        deadline = time.monotonic() + timeout
        while job["state"] not in DONE:
            if time.monotonic() > deadline:
                raise ApiError(f"job {job['id']} ({job['name']}) still {job['state']}")
            time.sleep(poll)
            job = self.call("GET", f"/api/jobs/{job['id']}/")
        if job["state"] != "succeeded":
            raise ApiError(f"job {job['id']} ({job['name']}) {job['state']}: {job['error']}")
        return job

    def publish(self, batch_id: int, *, timeout: float, poll: float) -> dict:
        """Publish a draft, waiting while the server still fetches its images (a background
        job under `make serve`: publishing before it ends is refused)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                done = self.call("POST", f"/api/batches/{batch_id}/publish/")
            except ApiError as exc:
                if "still being fetched" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(poll)
                continue
            if done["job"] is not None:  # a remote provider publishes in the background
                self.wait_job(done["job"], timeout=timeout, poll=poll)
            return done["batch"]

    def wait_batch(self, batch_id: int, *, timeout: float, poll: float) -> dict:
        deadline = time.monotonic() + timeout
        batch = self.call("GET", f"/api/batches/{batch_id}/")
        while batch["status"] != "completed":
            if time.monotonic() > deadline:
                raise ApiError(f"batch {batch_id} is still {batch['status']}")
            time.sleep(poll)
            batch = self.call("GET", f"/api/batches/{batch_id}/")
        return batch


def _multipart(fields: dict[str, Any], files: dict[str, Path]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    for name, path in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
            f'filename="{path.name}"\r\nContent-Type: application/json\r\n\r\n'
        )
        parts.append(head.encode() + path.read_bytes() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def run_stage(api: Api, run_id: int, stage: str, args: argparse.Namespace) -> dict:
    """Launch one stage's batch and wait until its HITs are done."""
    body: dict[str, Any] = {"stage": stage, "provider": args.provider, "publish": False}
    if args.reward:
        body["reward"] = args.reward
    batch = api.call("POST", f"/api/runs/{run_id}/batches/", body)
    api.log(
        f"  batch {batch['id']}: {batch['hits']} HITs x {batch['assignments_per_hit']} "
        f"assignment(s) at ${batch['reward']}"
    )
    for warning in batch.get("warnings", []):
        api.log(f"  note: {warning}")
    batch = api.publish(batch["id"], timeout=args.job_timeout, poll=args.poll)
    api.log(f"  batch {batch['id']} {batch['status']}")
    if args.provider == "simulated":
        workers = args.workers
        while True:
            done = api.call(
                "POST",
                f"/api/batches/{batch['id']}/simulate/",
                {"workers": workers, "accuracy": args.accuracy, "seed": args.seed},
            )
            api.log(f"  simulated: {done['assignments']} assignments by {done['workers']} workers")
            status = api.call("GET", f"/api/batches/{batch['id']}/")["status"]
            if status == "completed" or workers >= MAX_SIMULATED:
                break
            # Nobody takes two stage-3 HITs showing one image: a small crowd leaves HITs none
            # of its workers may take. More simulated workers (the first ones find nothing).
            workers = min(MAX_SIMULATED, 2 * workers)
    else:
        api.log(f"  waiting for the invited workers to finish batch {batch['id']} ...")
    # Simulated work is done when the call returns: nothing more will come.
    timeout = args.stage_timeout if args.provider == "local" else 0
    batch = api.wait_batch(batch["id"], timeout=timeout, poll=args.poll)
    held = api.call("GET", f"/api/reviews/?run={run_id}&batch={batch['id']}&status=open")
    api.log(f"  batch {batch['id']} {batch['status']}")
    if held["count"]:
        api.log(
            f"  {held['count']} submission(s) held for review (not counted until decided): "
            f"{args.url.rstrip('/')}/review/ or POST /api/reviews/decide/"
        )
    return batch


def choose_project(api: Api, wanted: str | None) -> dict:
    """The project the run will be made in (`wanted`: an id or a name; None: the Default
    project, as `POST /api/runs/` chooses), refused unless the user may create runs there."""
    projects: list[dict] = []
    page: str | None = "/api/projects/?limit=500"
    while page:
        answer = api.call("GET", page)
        projects += answer["results"]
        page = answer["next"]
    if wanted is None:
        found = [p for p in projects if p["default"]]
    else:
        found = [p for p in projects if wanted in (str(p["id"]), p["name"])]
    yours = ", ".join(f"{p['id']} ({p['name']})" for p in projects if p["may_create_runs"])
    what = "the Default project" if wanted is None else f"project {wanted!r}"
    if not found or not found[0]["may_create_runs"]:
        raise ApiError(
            f"you may not create runs in {what} (a researcher of it may): give --project, one "
            f"of yours: {yours or 'none (ask for the researcher role in a project)'}"
        )
    return found[0]


def main(argv: list[str] | None = None, *, log: Any = print) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("CROWDVL_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("CROWDVL_API_TOKEN"))
    parser.add_argument("--captions", type=Path, default=SAMPLE, help="COCO captions JSON")
    parser.add_argument("--name", default=None, help="dataset and run name (default: unique)")
    parser.add_argument(
        "--project", default=None, help="project id or name (default: the Default project)"
    )
    parser.add_argument("--provider", choices=["local", "simulated"], default="local")
    parser.add_argument(
        "--reward", default=None, help="$ per HIT (default: the stage's, paying the minimum)"
    )
    parser.add_argument("--invite", default="", help="local: comma-separated emails or ids")
    parser.add_argument("--workers", type=int, default=8, help="simulated workers per stage")
    parser.add_argument("--accuracy", type=float, default=0.95, help="simulated accuracy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("bison-export"))
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls")
    parser.add_argument("--job-timeout", type=float, default=1800)
    parser.add_argument("--stage-timeout", type=float, default=7 * 24 * 3600)
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token (manage.py api_token <user>) or set CROWDVL_API_TOKEN")
    labels = [label.strip() for label in args.invite.split(",") if label.strip()]
    if args.provider == "local" and not labels:
        parser.error("--provider local needs --invite with at least three people")
    api = Api(args.url, args.token, log=log)
    name = args.name or f"api-bison-{time.strftime('%Y%m%d-%H%M%S')}"
    # Before anything is imported or run: may the user create runs in the project, and does
    # the server offer this crowd? A refusal later would leave the imported dataset behind.
    project = choose_project(api, args.project)
    offered = [p["name"] for p in api.call("GET", "/api/providers/")]
    if args.provider not in offered:
        raise ApiError(
            f"the server does not offer the {args.provider} crowd (it offers "
            f"{', '.join(offered)}; the simulated one only with DJANGO_DEBUG=1, as `make serve`)"
        )

    log(f"1. Import {args.captions.name}")
    job = api.call(
        "POST",
        "/api/datasets/import/",
        {"name": name, "image_source": "coco_url"},
        files={"file": args.captions},
    )
    result = api.wait_job(job, timeout=args.job_timeout, poll=args.poll)["result"]
    log(f"  dataset {result['dataset']}: {result['images']} images, {result['captions']} captions")

    log("2. Create the run")
    body = {"dataset": result["dataset"], "kind": "bison", "name": name, "project": project["id"]}
    run = api.call("POST", "/api/runs/", body)
    log(f"  run {run['id']} in project {run['project']}")

    log("3. Stage 1: pair images (FastText trained on the captions)")
    job = api.call("POST", f"/api/runs/{run['id']}/jobs/pairing/")
    api.wait_job(job, timeout=args.job_timeout, poll=args.poll)
    summary = api.call("GET", f"/api/runs/{run['id']}/summary/")
    log(f"  {summary}")

    if args.provider == "local":
        links = api.call("POST", f"/api/runs/{run['id']}/invitations/", {"labels": labels})
        log("  send each person their own link:")
        for invitation in links:
            log(f"    {invitation['label']}: {invitation['link']}")

    log("4. Stage 2: caption selection")
    run_stage(api, run["id"], "bison_selection", args)
    log("5. Stage 3: verification by two other workers")
    run_stage(api, run["id"], "bison_verification", args)

    log("6. Export")
    job = api.call("POST", f"/api/runs/{run['id']}/exports/")
    api.wait_job(job, timeout=args.job_timeout, poll=args.poll)
    export = api.call("GET", f"/api/runs/{run['id']}/exports/", None)["results"][0]
    args.out.mkdir(parents=True, exist_ok=True)
    root = args.out.resolve()
    for item in export["files"]:
        # Names are paths inside the version (data/<set>.parquet); never outside --out.
        target = (root / item["name"]).resolve()
        if not target.is_relative_to(root):
            raise SystemExit(f"refusing to write {item['name']!r} outside {args.out}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(api.call("GET", item["url"], raw=True))
    names = ", ".join(item["name"] for item in export["files"])
    log(f"  export v{export['version']} ({export['format']}) -> {args.out}: {names}")
    return {"run": run["id"], "export": export, "out": str(args.out)}


if __name__ == "__main__":
    try:
        main()
    except ApiError as exc:
        sys.exit(f"error: {exc}")
