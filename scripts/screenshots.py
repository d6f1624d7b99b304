"""Screenshots of the researcher's console for docs/screenshots/, taken in headless Chromium
from the demo's database (run `make demo` first):

    .venv/bin/python scripts/screenshots.py        # or: make screenshots

Starts Django's development server on the embedded database (a free port), signs in as a
staff user it creates if missing (`screenshots`), and saves one PNG per page at a laptop's
width. Nothing is written outside docs/screenshots/ and that user.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("CROWDVL_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from annotation.models import Run

    runs = {r.kind: r.pk for r in Run.objects.order_by("pk")}
    if not runs:
        sys.exit("no runs: run `make demo` first")
    password = secrets.token_urlsafe(16)
    user, _ = get_user_model().objects.get_or_create(
        username="screenshots", defaults={"is_staff": True, "is_superuser": True}
    )
    user.set_password(password)
    user.save()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        from playwright.sync_api import sync_playwright

        first = min(runs.values())
        pages = {
            "dashboard": "/",
            "run_page": f"/runs/{first}/",
            "workers": f"/runs/{runs.get('eccv', first)}/workers/",
            "exports": f"/runs/{first}/exports/",
            "new_batch": f"/runs/{first}/batches/new/",
            "review_queue": "/review/",
            "datasets": "/datasets/",
            "eccv_run_page": f"/runs/{runs.get('eccv', first)}/",
            "run_input": f"/runs/{runs.get('eccv', first)}/inputs/annotator/",
            "api_docs": "/api/docs/",
        }
        # At 1280 px; the datasheet one the whole page (the ECCV export's datasheet).
        wide = {
            "exports_1280": (f"/runs/{first}/exports/", False),
            "exports_datasheet": (f"/runs/{runs.get('eccv', first)}/exports/", True),
        }
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(f"{base}/admin/login/?next=/")
            page.fill("#id_username", "screenshots")
            page.fill("#id_password", password)
            page.click("input[type=submit]")
            for name, path in pages.items():
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(OUT / f"{name}.png"), full_page=False)
                print(f"docs/screenshots/{name}.png  {path}")
            page.set_viewport_size({"width": 1280, "height": 900})
            for name, (path, whole) in wide.items():
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(OUT / f"{name}.png"), full_page=whole)
                print(f"docs/screenshots/{name}.png  {path} (1280 px)")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
