"""Bad ids and numbers on the command line are a clear error naming the argument (issue 8,
part 5)."""

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("run_id", "message"),
    [
        ("99999", "no run 99999"),
        (str(2**63), "argument run: must be a whole number"),  # beyond the id column
        (str(2**70), "argument run: must be a whole number"),
    ],
)
def test_unknown_ids_on_the_cli_are_a_clear_error(run_id, message):
    with pytest.raises(CommandError, match=message):
        call_command("bison_export", run_id)


def test_bad_ks_are_a_clear_error():
    with pytest.raises(CommandError, match="--ks"):
        call_command("eccv_evaluate", "1", "--rankings", "x.json", "--ks", "abc")
