"""MTurk's client (annotation/crowd/mturk/client.py): credentials, endpoints, retries, and the
Stubber that checks every call against MTurk's model."""

import pytest

from annotation.crowd.mturk.client import MTurkError, MTurkGateway, make_client
from pipeline.errors import InputError
from tests.annotation.drivers import stubbed_mturk

pytestmark = pytest.mark.django_db


def test_missing_credentials_are_a_clear_error(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(InputError, match="no AWS credentials") as err:
        make_client("sandbox")
    assert err.value.field == "credentials"
    with pytest.raises(InputError, match="'sandbox' or 'production'"):
        make_client("eu-west-1")


def test_sandbox_and_production_endpoints(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    assert "sandbox" in make_client("sandbox").meta.endpoint_url
    assert (
        make_client("production").meta.endpoint_url
        == "https://mturk-requester.us-east-1.amazonaws.com"
    )


def test_throttling_is_retried_with_backoff_and_request_errors_are_not(mt):
    gateway = mt.gateway
    mt.expect_error("GetAccountBalance", "ThrottlingException", "Rate exceeded")
    mt.expect_error("GetAccountBalance", "ServiceFault", "Internal failure")
    mt.expect("GetAccountBalance", {"AvailableBalance": "7.00"})
    assert gateway.call("GetAccountBalance")["AvailableBalance"] == "7.00"
    assert mt.sleeps == [1.0, 2.0]
    mt.expect_error("ApproveAssignment", "RequestError", "Assignment X does not exist.")
    with pytest.raises(MTurkError, match="Assignment X does not exist"):
        gateway.call("ApproveAssignment", AssignmentId="X")
    assert mt.sleeps == [1.0, 2.0]
    short = MTurkGateway(gateway.client, max_attempts=2, sleep=mt.sleeps.append)
    for _ in range(2):
        mt.expect_error("GetAccountBalance", "ThrottlingException", "Rate exceeded")
    with pytest.raises(MTurkError, match="gave up after 2 attempts"):
        short.call("GetAccountBalance")


def test_stub_rejects_requests_that_do_not_fit_the_service_model():
    _, stubber, gateway, _ = stubbed_mturk()
    stubber.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []})
    from botocore.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError):
        gateway.client.notify_workers(Subject="x")  # missing MessageText and WorkerIds
