"""A full HIT in Chromium against the production settings: gunicorn, DEBUG off, static files
collected and served by WhiteNoise, a random secret key."""

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Answer, Assignment, AssignmentState
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.pages.work.test_shell_browser import ARGS, CHROMIUM, begin
from tests.factories import database_name

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[4]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def production_server(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
        "TEST_DATABASE_NAME": database_name(),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
        "CROWDVL_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "CROWDVL_PUBLIC_URL": url,
        # Plain HTTP on loopback: TLS (and so redirects and Secure cookies) is the proxy's job.
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DJANGO_SESSION_COOKIE_SECURE": "0",
        "DJANGO_CSRF_COOKIE_SECURE": "0",
        "DJANGO_SECURE_HSTS_SECONDS": "0",
    }
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stderr
    assert (tmp_path / "static" / "annotation" / "task.js").exists()
    log = open(tmp_path / "gunicorn.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/static/annotation/task.js", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                log.flush()
                pytest.fail((tmp_path / "gunicorn.log").read_text())
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


class Server:
    def __init__(self, url: str) -> None:
        self.url = url


def test_a_full_hit_under_production_settings(production_server, paired_run):
    from playwright.sync_api import sync_playwright

    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=3
        )
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page()
        begin(page, Server(production_server), batch, "prod-alice")
        submit = page.locator("#submit")
        expect(submit).to_be_disabled()  # task.js (a collected static file) runs
        for n in range(3):
            page.locator(f"fieldset#q{n} label").first.click()
        expect(submit).to_be_enabled()
        submit.click()
        expect(page.locator(".messages")).to_contain_text("answers were saved")
        # A missing page answers without any debug information.
        response = page.goto(production_server + "/no/such/page/")
        assert response.status == 404
        body = page.content()
        assert "Not found" in body and "Traceback" not in body and "DEBUG" not in body
        browser.close()
    # After submitting, the page takes the worker to their next HIT (a second assignment).
    assignment = Assignment.objects.get(
        worker__external_id="prod-alice", state=AssignmentState.SUBMITTED
    )
    assert Answer.objects.filter(assignment=assignment).count() == 3
