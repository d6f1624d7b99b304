"""The fixtures the tests of annotation/crowd/mturk/ share: `mt`, the MTurk player whose
Stubber checks every call, and `draft`, a BISON stage-2 batch for MTurk."""

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.runs.batches import batch_create
from tests.annotation.drivers import MTurkDriver


@pytest.fixture
def mt(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = MTurkDriver(client)
    yield driver
    driver.done()


@pytest.fixture
def draft(paired_run):
    return batch_create(
        run=paired_run,
        stage=BisonStage.SELECTION,
        provider="mturk",
        items_per_hit=2,
        reward="0.50",
    )
