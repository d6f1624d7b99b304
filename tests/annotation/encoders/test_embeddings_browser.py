"""The embeddings page in headless Chromium: a researcher opens a dataset's embeddings from the
datasets list, asks the estimate, starts encoding with the tiny model, sees the stored set
with its provenance and deletes it."""

import pytest
from playwright.sync_api import expect

from annotation.encoders.models import EmbeddingSet
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.work.test_shell_browser import browser, page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_encode_with_a_model_from_the_datasets_page(
    page,  # noqa: F811
    live_server,
    dataset,
    import_dir,
    django_user_model,
):
    django_user_model.objects.create_user("res", password="pw", is_staff=True)
    sign_in(page, live_server, "res")
    page.goto(f"{live_server.url}/datasets/")
    page.click(f"#dataset-{dataset.pk} a[href$='/embeddings/']")
    expect(page.locator("#empty")).to_be_visible()
    page.fill("input[name=checkpoint]", "tiny-clip")
    page.fill("input[name=license]", "MIT")
    page.select_option("select[name=dtype]", "float32")
    page.click("#estimate-button")
    expect(page.locator("#estimate")).to_contain_text(f"{dataset.images.count()} images")
    assert not EmbeddingSet.objects.exists()

    page.click("#start")  # tasks run in-process here: the page shows the finished set
    es = EmbeddingSet.objects.get()
    row = page.locator(f"#set-{es.pk}")
    expect(row.locator(".state")).to_contain_text("Ready")
    expect(row).to_contain_text(es.checkpoint_sha256[:12])
    expect(row).to_contain_text("MIT")
    expect(row.locator(".dtype")).to_have_text("float32")

    row.locator("button.delete").click()
    expect(page.locator("#empty")).to_be_visible()
    assert not EmbeddingSet.objects.exists()
