"""Issue 25's audit: CSV cells a spreadsheet would run as a formula are neutralised."""

import pytest

pytestmark = pytest.mark.django_db


# CSV files for people to open: a cell a spreadsheet would run as a formula starts with '.

FORMULA = '=HYPERLINK("http://x","y")'


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(admin_client, paired_run, capsys):
    import csv

    from django.core.management import call_command

    from annotation.crowd.local.invitations import invitations_create

    invitations_create(run=paired_run, labels=[FORMULA, "@SUM(A1)", "ann"])
    body = admin_client.get(f"/runs/{paired_run.pk}/invitations.csv").content.decode()
    labels = [row[0] for row in csv.reader(body.splitlines())][1:]
    assert labels == ["'" + FORMULA, "'@SUM(A1)", "ann"]
    call_command("invite_workers", str(paired_run.pk), "+1 dora")
    out = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert out[1][0] == "'+1 dora"
    from annotation.spreadsheet import spreadsheet_cell

    for text in ("=1+1", "+1", "-1", "@a", "\tx", "\rx"):
        assert spreadsheet_cell(text) == "'" + text
    assert spreadsheet_cell("a=1") == "a=1" and spreadsheet_cell("") == ""
