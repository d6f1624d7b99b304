"""Three invited workers answer at once, each in their own Chromium context, on `make serve`'s
embedded default (the SQLite file, the web server and its Celery worker): no page fails and
every answer is kept."""

import asyncio

import pytest
from playwright.async_api import async_playwright

from tests.annotation.crowd.local.test_views_sqlite_concurrency import _env, _run
from tests.annotation.management.commands.test_serve import serving
from tests.annotation.pages.work.test_shell_browser import ARGS, CHROMIUM

pytestmark = [pytest.mark.long, pytest.mark.browser]
ITEMS = 12  # six HITs of two pairs, each answered by all three workers


async def _worker(browser, base: str, token: str, batch: int, failures: list[str]) -> int:
    context = await browser.new_context()
    page = await context.new_page()
    page.on(
        "response",
        lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 500 else None,
    )
    await page.goto(f"{base}/join/{token}/")
    await page.click("#consent")
    await page.click(f"#batches a[href='/work/{batch}/']")
    await page.click("#start")
    submitted = 0
    while True:
        await page.wait_for_selector("#task-form, #done")
        if await page.locator("#done").count():
            break
        questions = page.locator("fieldset.question")
        for n in range(await questions.count()):
            await questions.nth(n).locator("input[type=radio]").first.check()
        await page.click("#submit")
        await page.wait_for_selector(".messages, #done")
        submitted += 1
        if await page.locator("#done").count():
            break
        await page.goto(f"{base}/work/{batch}/next/")
    await context.close()
    return submitted


async def _three_at_once(base: str, tokens: list[str], batch: int, failures: list[str]):
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            return await asyncio.gather(
                *(_worker(browser, base, t, batch, failures) for t in tokens)
            )
        finally:
            await browser.close()


def test_three_workers_at_once_on_the_embedded_default_lose_nothing(tmp_path):
    env = _env(tmp_path)
    made = _run(env, "setup", "3", str(ITEMS))
    served = {**env, "CELERY_BROKER_URL": "filesystem://", "DJANGO_DEBUG": "1"}  # as make serve
    failures: list[str] = []
    with serving(tmp_path, served) as (base, _):
        counts = asyncio.run(_three_at_once(base, made["tokens"], made["batch"], failures))
    stored = _run(env, "check", str(made["batch"]))
    assert failures == []
    assert counts == [ITEMS // 2] * 3  # every worker answered every HIT
    assert stored == {"submitted": sum(counts), "partial": 0, "answers": sum(counts) * 2}
