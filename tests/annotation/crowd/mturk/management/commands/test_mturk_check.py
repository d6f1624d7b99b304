"""`manage.py mturk_check`: the endpoint and the account's balance."""

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_check_command_shows_endpoint_and_balance(mt, capsys):
    mt.expect("GetAccountBalance", {"AvailableBalance": "42.10"})
    call_command("mturk_check")
    out = capsys.readouterr().out
    assert "mturk-requester-sandbox.us-east-1.amazonaws.com" in out and "$42.10" in out
