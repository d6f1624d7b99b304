"""A full COCO-BISON run driven in headless Chromium, from upload to download, with no command
line: a researcher (a project member, not staff) signs in, uploads a COCO captions file,
creates a run, starts stage 1 from the run page, launches and publishes stage 2, invites
local workers who open their links in their own browsers and answer, launches stage 3 for
the others (two per HIT: nobody takes two HITs showing one image), starts the export and
downloads its files."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.models import Annotator
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Export,
    Hit,
    Question,
    Run,
)
from annotation.selectors.release.exports import export_files
from annotation.services.runs.projects import project_default, project_member_set
from tests.annotation.pages.work.test_shell_browser import browser  # noqa: F401
from tests.factories import placeholder_images, write_coco

pytestmark = [pytest.mark.long, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORKERS = ["w1", "w2", "w3", "w4", "w5", "w6", "w7"]


def sign_in(tab, live_server, username, password="pw"):
    tab.goto(f"{live_server.url}/accounts/login/")
    tab.fill("input[name=username]", username)
    tab.fill("input[name=password]", password)
    tab.click("#login button[type=submit]")
    expect(tab.locator("#login")).to_have_count(0)


def upload(tab, live_server, captions, name, images, timeout=30_000):
    """The import page's form: a COCO file with a local image folder, until its job has
    succeeded and the datasets page lists it."""
    tab.set_input_files("input[name=file]", str(captions))
    tab.fill("input[name=name]", name)
    tab.select_option("select[name=image_source]", "local_dir")
    tab.fill("input[name=image_location]", str(images))
    tab.click("#import")
    expect(tab.locator("#state")).to_have_text("succeeded", timeout=timeout)
    tab.goto(f"{live_server.url}/datasets/")
    expect(tab.locator("#datasets")).to_contain_text(name)


def launch(tab, live_server, run_id, stage, **fields):
    """New batch form (`fields`: more of its inputs, e.g. limit) -> estimate page ->
    publish; the batch's id."""
    tab.goto(f"{live_server.url}/runs/{run_id}/")
    tab.click("#new-batch")
    tab.select_option("select[name=stage]", stage)
    tab.select_option("select[name=provider]", "local")
    for name, value in fields.items():
        tab.fill(f"input[name={name}]", str(value))
    tab.click("#estimate")
    expect(tab.locator("#estimate-table")).to_be_visible()
    expect(tab.locator("#refusal")).to_have_count(0)
    batch_id = int(re.search(r"/batches/(\d+)/", tab.url).group(1))
    tab.click("#publish")
    expect(tab.locator(".messages")).to_contain_text("published")
    return batch_id


def invite(tab, live_server, run_id, labels):
    """The run's invitations page: one link per label, by label."""
    tab.goto(f"{live_server.url}/runs/{run_id}/")
    tab.click("#invite-workers")
    tab.fill("#labels", "\n".join(labels))
    tab.click("#invite")
    return {
        row.locator("td").nth(0).inner_text(): row.locator("code").inner_text()
        for row in tab.locator("table.queue tbody tr").all()
    }


def work(tab, link, batch_id, answer):
    """A worker opens their link, consents, starts the batch and answers until done."""
    tab.goto(link)
    if tab.locator("#consent").count():
        tab.click("#consent")
    tab.click(f"#batches a[href='/work/{batch_id}/']")
    tab.click("#start")
    hits = 0
    while True:
        tab.wait_for_selector("#task-form, #done")
        if tab.locator("#done").count():
            return hits
        answer(tab)
        expect(tab.locator("#submit")).to_be_enabled()
        tab.click("#submit")
        hits += 1


def select_first_caption(tab):
    for _ in range(tab.locator("fieldset.question").count()):
        tab.keyboard.press("1")  # its first caption; focus moves to the next question


def verifier(worker):
    """Stage 3: the side the worker's current HIT shows the positive image on (the page itself
    never says; the test reads it from the database, as a careful worker would see it)."""

    def answer(tab):
        assignment = Assignment.objects.get(
            worker__external_id=worker, state=AssignmentState.ACCEPTED
        )
        for q in Question.objects.filter(hit=assignment.hit).order_by("position"):
            tab.keyboard.press("2" if q.swapped else "1")  # right / left

    return answer


def test_full_bison_run_from_upload_to_download(browser, live_server, tmp_path, django_user_model):  # noqa: F811
    researcher = django_user_model.objects.create_user("rosa", password="pw")
    project_member_set(project=project_default().name, username="rosa", role="researcher")
    captions = write_coco(tmp_path / "upload" / "toy_captions.json")
    images = placeholder_images(tmp_path / "images")
    context = browser.new_context()
    tab = context.new_page()
    sign_in(tab, live_server, "rosa")

    # 1. Upload: the import runs as a job; its page follows it.
    tab.goto(f"{live_server.url}/datasets/import/")
    upload(tab, live_server, captions, "browser-toy", images)

    # 2. New run with the flow's defaults.
    tab.goto(f"{live_server.url}/runs/new/")
    tab.click("#kinds a[href='/runs/new/bison/']")
    tab.select_option("select[name=dataset]", label="browser-toy")
    tab.fill("input[name=name]", "from the browser")
    tab.click("#create")
    expect(tab.locator(".messages")).to_contain_text("created")
    run = Run.objects.get(name="from the browser")
    assert tab.url.endswith(f"/runs/{run.pk}/") and run.owner == researcher

    # 3. Stage 1 from the run page (FastText trained on the captions).
    tab.click("#start-pairing")
    expect(tab.locator("#jobs .state").first).to_have_text("succeeded", timeout=60_000)
    expect(tab.locator("#run-status")).to_have_text("paired")

    # 4. Stage 2 and the workers' links.
    selection = launch(tab, live_server, run.pk, BisonStage.SELECTION)
    links = invite(tab, live_server, run.pk, WORKERS)
    assert sorted(links) == WORKERS and all(
        link.startswith(f"{live_server.url}/join/") for link in links.values()
    )

    workers = {name: browser.new_context().new_page() for name in WORKERS}
    assert work(workers["w1"], links["w1"], selection, select_first_caption) > 0
    assert Batch.objects.get(pk=selection).status == BatchStatus.COMPLETED

    # 5. Stage 3 by the others (w1 selected the captions: not in the verifiers' pool). Nobody
    # takes two HITs showing one image, so each of the HITs gets its own two verifiers.
    verification = launch(tab, live_server, run.pk, BisonStage.VERIFICATION)
    done = []
    for name in WORKERS[1:]:
        if Batch.objects.get(pk=verification).status == BatchStatus.COMPLETED:
            break
        done.append(work(workers[name], links[name], verification, verifier(name)))
    assert done == [1] * (2 * Hit.objects.filter(batch=verification).count())
    assert Batch.objects.get(pk=verification).status == BatchStatus.COMPLETED

    # 6. Export from the exports page and download every file.
    tab.goto(f"{live_server.url}/runs/{run.pk}/exports/")
    tab.click("#export-new")
    expect(tab.locator(".messages")).to_contain_text("Export job")
    export = Export.objects.get(run=run)
    tab.reload()
    names = [p.name for p in export_files(export)]
    assert "manifest.json" in names and len(names) >= 2
    for name in names:
        with tab.expect_download() as info:
            tab.click(f"#export-{export.pk} a[href$='/{name}']")
        saved = Path(info.value.path())
        assert saved.read_bytes() == (Path(export_files(export)[names.index(name)])).read_bytes()
    assert export.manifest["records"] > 0  # verified triples made it into the dataset
    for page in (*workers.values(), tab):
        page.context.close()


def test_eccv_run_with_its_models_from_the_browser(
    browser,  # noqa: F811
    live_server,
    tmp_path,
    django_user_model,
):
    """An ECCV run created in the browser takes its models on the run page (an uploaded
    rankings file and the built-in fastText) and proposes candidates from the job button."""
    from tests.annotation.conftest import rankings_file
    from tests.factories import dataset_factory

    django_user_model.objects.create_user("rosa", password="pw")
    project_member_set(project=project_default().name, username="rosa", role="researcher")
    dataset_factory(tmp_path, image_dir=placeholder_images(tmp_path / "images"), name="eccv-toy")
    tab = browser.new_context().new_page()
    sign_in(tab, live_server, "rosa")
    tab.goto(f"{live_server.url}/runs/new/eccv/")
    tab.select_option("select[name=dataset]", label="eccv-toy")
    for key, value in (("image_queries", "3"), ("caption_queries", "4"), ("k", "2")):
        tab.fill(f"input[name=config_{key}]", value)
    tab.fill("input[name=config_models]", "2")
    tab.click("#create")
    expect(tab.locator(".messages")).to_contain_text("created")
    run = Run.objects.get(kind="eccv", dataset__name="eccv-toy")

    tab.click("#input-annotator")
    tab.set_input_files("input[name=file]", rankings_file(tmp_path, run))
    tab.fill("input[name=name]", "listed")
    tab.select_option("select[name=kind]", "rankings")
    tab.click("#apply")
    expect(tab.locator(".messages")).to_contain_text("Model listed (rankings) added.")
    tab.click("#input-annotator")
    tab.fill("input[name=name]", "ft")
    tab.select_option("select[name=kind]", "embeddings")
    tab.click("#apply")  # no file for an imported model: refused next to the file field
    expect(tab.locator(".errorlist")).to_contain_text("needs its file")
    tab.select_option("select[name=kind]", "fasttext")
    tab.fill("input[name=dim]", "16")
    tab.click("#apply")
    expect(tab.locator(".messages")).to_contain_text("Model ft (fasttext) added.")
    assert sorted(Annotator.objects.filter(run=run).values_list("name", flat=True)) == [
        "ft",
        "listed",
    ]

    tab.click("#start-propose")
    expect(tab.locator("#jobs .state").first).to_have_text("succeeded", timeout=60_000)
    funnel = tab.locator("#funnel-table")
    expect(funnel).to_contain_text("proposals")
    assert run.items.exists()
    tab.context.close()
