"""The exports page in headless Chromium: a version's Parquet file under `data/` downloaded
from its link, then the "Release bundle (.tar.gz)" button packs the version (a job) and the
bundle is downloaded from the page, its sha256 the one the page shows."""

import hashlib
import tarfile
from pathlib import Path

import pytest
from django.template.defaultfilters import filesizeformat
from playwright.sync_api import expect

from annotation.models import Job, JobState
from annotation.selectors.release.exports import export_file_entries, export_folder
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.exports.test_views import exported  # noqa: F401
from tests.annotation.pages.work.test_shell_browser import browser  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_parquet_download_and_bundle_button(browser, live_server, exported, admin_user):  # noqa: F811
    tab = browser.new_context(accept_downloads=True).new_page()
    sign_in(tab, live_server, admin_user.username, password="password")
    tab.goto(f"{live_server.url}/runs/{exported.run_id}/exports/")
    section = tab.locator(f"#export-{exported.pk}")
    # The export's own table (every export also carries data/label_provenance.parquet).
    [parquet] = [
        e
        for e in export_file_entries(exported)
        if e.name.startswith("data/") and e.name != "data/label_provenance.parquet"
    ]
    selector = f"a[href$='/files/{parquet.name}']"
    link = section.locator(selector)
    expect(link).to_have_text(parquet.name)
    size = filesizeformat(parquet.size).replace("\xa0", " ")
    expect(section.locator("li", has=tab.locator(selector))).to_contain_text(size)
    with tab.expect_download() as info:
        link.click()
    assert Path(info.value.path()).read_bytes() == parquet.path.read_bytes()

    expect(section.locator(f"#bundle-{exported.pk}")).to_contain_text("not packed yet")
    tab.click(f"#bundle-new-{exported.pk}")
    expect(tab.locator(".messages")).to_contain_text("Bundle job")
    job = Job.objects.get(name="exports.bundle")
    assert job.state == JobState.SUCCEEDED, job.error
    tab.reload()
    bundle_link = tab.locator(f"#bundle-link-{exported.pk}")
    expect(bundle_link).to_have_text("eccv-v1.tar.gz")
    expect(tab.locator(f"#bundle-new-{exported.pk}")).to_have_count(0)
    expect(tab.locator(f"#bundle-{exported.pk}")).to_contain_text(job.result["sha256"])
    with tab.expect_download() as info:
        bundle_link.click()
    assert info.value.suggested_filename == "eccv-v1.tar.gz"
    saved = Path(info.value.path())
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == job.result["sha256"]
    folder = export_folder(exported).name
    with tarfile.open(saved) as tar:
        names = set(tar.getnames())
        sums = tar.extractfile(f"{folder}/SHA256SUMS").read().decode()
    assert f"{folder}/{parquet.name}" in names and f"  {parquet.name}\n" in sums
    tab.context.close()
