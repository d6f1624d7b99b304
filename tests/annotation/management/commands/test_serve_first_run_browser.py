"""A new lab's first run from an empty install (issue 27's "Done means"), in headless Chromium
against `make serve`'s embedded default: a fresh SQLite file, the web server and its Celery
worker on the file broker. The lab's first account comes from `createsuperuser`, as the
README says; from there everything is in the browser: a project and a member account
(console), the sample COCO file the demo uses imported with a local image folder, a BISON run,
stage 1, a stage-2 batch, invitations, a worker answering in their own browser, stage 3 by
another, the export and its datasheet read in the browser."""

import json
import re
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from annotation.flows.bison.vocabulary import BisonStage
from tests.annotation.crowd.local.test_views_sqlite_concurrency import _env
from tests.annotation.management.commands.test_serve import ROOT, serving
from tests.annotation.pages.dashboard.test_views_full_run_browser import (
    invite,
    launch,
    select_first_caption,
    sign_in,
    upload,
)
from tests.annotation.pages.dashboard.test_views_full_run_browser import work as answer_batch
from tests.annotation.pages.work.test_shell_browser import browser  # noqa: F401
from tests.factories import placeholder_images

pytestmark = [pytest.mark.long, pytest.mark.browser]

SAMPLE = ROOT / "data" / "sample" / "coco_captions_val2014.subset.json"  # as `make demo`


def left_always(tab):
    """Stage 3: "left" on every question; half the positives are on the left (the server
    balances sides), so some triples are verified and the others are not."""
    for _ in range(tab.locator("fieldset.question").count()):
        tab.keyboard.press("1")


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout


def test_a_new_labs_first_run_from_an_empty_install(browser, tmp_path):  # noqa: F811
    started = time.monotonic()
    ids = [image["id"] for image in json.loads(SAMPLE.read_text())["images"]]
    images = placeholder_images(tmp_path / "coco" / "val2014", ids)  # the lab's own copy
    env = {
        **_env(tmp_path),
        "DJANGO_DEBUG": "1",  # as `make serve`
        "CELERY_BROKER_URL": "filesystem://",
        "CROWDVL_IMAGE_DIRS": str(images),
        "DJANGO_SUPERUSER_PASSWORD": "first-admin-pw-0",
    }
    _manage(env, "migrate", "--no-input")
    _manage(env, "createsuperuser", "--no-input", "--username", "admin", "--email", "a@lab.org")
    with serving(tmp_path, env) as (base, _):
        server = SimpleNamespace(url=base)
        tab = browser.new_context().new_page()
        failures: list[str] = []
        tab.on("response", lambda r: failures.append(r.url) if r.status >= 500 else None)

        # 1. Staff make the lab's project and a researcher's account in the console.
        sign_in(tab, server, "admin", "first-admin-pw-0")
        tab.goto(f"{base}/projects/")
        tab.fill("input[name=new-name]", "Vision lab")
        tab.click("#new-project button[type=submit]")
        project = tab.locator("section.project", has_text="Vision lab")
        project.locator("input[name$=-username]").fill("rosa")
        project.locator("select[name$=-role]").select_option("researcher")
        project.locator("input[name$=-create_account]").check()
        project.locator("form.add-member button[type=submit]").click()
        password = tab.locator("#new-password code").inner_text()
        tab.click("#sign-out")
        sign_in(tab, server, "rosa", password)

        # 2. The empty dashboard leads to the import page; the sample COCO file is uploaded
        # with the folder of its images (the worker imports it in the background).
        expect(tab.locator("a[href='/datasets/import/']").first).to_be_visible()
        tab.locator("a[href='/datasets/import/']").first.click()
        upload(tab, server, SAMPLE, "val2014-sample", images, timeout=60_000)
        expect(tab.locator("#datasets")).to_contain_text(str(len(ids)))

        # 3. A BISON run in the lab's project, one verifier per triple (a small lab).
        tab.goto(f"{base}/runs/new/bison/")
        tab.select_option("select[name=dataset]", label="val2014-sample")
        tab.fill("input[name=name]", "first run")
        tab.fill("input[name=config_verifiers]", "1")
        tab.click("#create")
        expect(tab.locator(".messages")).to_contain_text("created")
        run_id = int(re.search(r"/runs/(\d+)/", tab.url).group(1))

        # 4. Stage 1 by the background worker, followed live on the run page.
        tab.click("#start-pairing")
        expect(tab.locator("#jobs .state").first).to_have_text("succeeded", timeout=120_000)
        expect(tab.locator("#run-status")).to_have_text("paired")

        # 5. A small stage-2 batch, published; two workers invited.
        selection = launch(tab, server, run_id, BisonStage.SELECTION, limit=10)
        links = invite(tab, server, run_id, ["ana", "ben", "cy"])
        assert all(link.startswith(f"{base}/join/") for link in links.values())

        # 6. Ana answers stage 2 in her own browser; the run says stage 2 is done.
        ana = browser.new_context().new_page()
        assert answer_batch(ana, links["ana"], selection, select_first_caption) == 1
        tab.goto(f"{base}/runs/{run_id}/")
        expect(tab.locator("#run-status")).to_have_text("selected")

        # 7. Stage 3 from her selections, by Ben (not in stage 2's pool), and by Cy where the
        # packing (a secret layout seed) split the triples over HITs sharing an image, which
        # nobody may see twice (issue 25).
        verification = launch(tab, server, run_id, BisonStage.VERIFICATION)
        ben = browser.new_context().new_page()
        answered = answer_batch(ben, links["ben"], verification, left_always)
        assert answered >= 1
        tab.goto(f"{base}/batches/{verification}/")
        hits = int(tab.locator("#hits").inner_text().split()[0])
        if answered < hits:
            cy = browser.new_context().new_page()
            answered += answer_batch(cy, links["cy"], verification, left_always)
        assert answered == hits
        tab.goto(f"{base}/runs/{run_id}/")
        expect(tab.locator("#run-status")).to_have_text("verified")

        # 8. The export (a background job) and its datasheet, read in the browser.
        tab.goto(f"{base}/runs/{run_id}/exports/")
        tab.click("#export-new")
        expect(tab.locator(".messages")).to_contain_text("Export job")
        deadline = time.monotonic() + 60
        while not tab.locator("section.export").count():
            assert time.monotonic() < deadline, "the export never appeared"
            time.sleep(1)
            tab.reload()
        files = tab.locator("section.export ul.files")
        expect(files).to_contain_text("manifest.json")
        expect(files).to_contain_text("bison_annotations")
        tab.locator("section.export a[id^=datasheet-]").click()
        body = tab.locator("body")
        expect(body).to_contain_text("first run")
        expect(body).to_contain_text("val2014-sample")
        datasheet = body.inner_text()
        for page in (ana, ben, tab):
            page.context.close()
    assert failures == []
    assert "SIMULATED" not in datasheet  # real people answered
    print(f"first run from an empty install: {time.monotonic() - started:.1f} s")
