import secrets

import pytest

from annotation.services.release.release_terms import run_release_terms_set
from tests.annotation.flows.eccv.test_eccv_results import export_of, judged  # noqa: F401
from tests.annotation.publish.http_standin import serve
from tests.annotation.publish.hub_standin import HubStandIn
from tests.annotation.publish.zenodo_standin import ZenodoStandIn


@pytest.fixture
def released(judged, run_on_commit):  # noqa: F811
    """A licensed ECCV export with its creators: what may be published."""
    run_release_terms_set(
        run=judged, release={"license": "cc-by-4.0", "creators": "Ada L.; Alan T.", "citation": "X"}
    )
    return export_of(judged, run_on_commit)


@pytest.fixture
def hub(settings, monkeypatch):
    # Another test in this process may have put the Hub client offline (the MiniLM annotator
    # sets HF_HUB_OFFLINE before huggingface_hub reads it at import): publishing is online.
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    token = "hf_" + secrets.token_urlsafe(24)
    standin = HubStandIn(users={token: "ada"})
    server = serve(standin)
    settings.CROWDVL_HF_TOKEN, settings.CROWDVL_HF_ENDPOINT = token, standin.url
    standin.token = token
    yield standin
    server.shutdown()


@pytest.fixture
def zenodo(settings):
    token = secrets.token_urlsafe(45)
    standin = ZenodoStandIn(users={token: secrets.randbelow(90000) + 10000})
    server = serve(standin)
    settings.CROWDVL_ZENODO_TOKEN, settings.CROWDVL_ZENODO_URL = token, standin.url
    standin.token = token
    yield standin
    server.shutdown()
