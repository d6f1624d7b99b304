"""NUL and lone surrogates never reach the database: refused naming the field on every path
(issue 8, part 5). The COCO-import cases are in services/datasets/test_datasets.py."""

import json

import pytest

from annotation.models import Run
from annotation.services.runs.runs import run_create
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
def test_nul_and_lone_surrogates_never_reach_the_database(dataset, admin_client, bad):
    from annotation.crowd.local.invitations import invitations_create
    from annotation.flows.eccv.services.annotators import eccv_annotator_add

    with pytest.raises(InputError) as info:
        run_create(dataset=dataset, name=bad)
    assert info.value.field == "name"
    with pytest.raises(InputError) as info:
        run_create(dataset=dataset, config={"note": bad})
    assert info.value.field == "config.note"
    run = run_create(dataset=dataset)
    with pytest.raises(InputError) as info:
        eccv_annotator_add(run=run, name=bad, kind="fasttext")
    assert info.value.field == "name"
    with pytest.raises(InputError) as info:
        invitations_create(run=run, labels=[bad])
    assert info.value.field == "labels"
    response = admin_client.post(
        "/api/runs/",
        json.dumps({"dataset": dataset.name, "name": bad}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert Run.objects.count() == 1
