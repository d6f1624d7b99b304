"""Run statuses in words no flow owns (issue 26, BREAKING for readers of stored values and the
API): BISON's "pairing"/"paired" become "preparing"/"prepared"; a flow's first (or only)
crowd stage is "collecting"/"collected" (BISON's "selecting"/"selected", the other flows'
"verifying"/"verified") and BISON's second one "collecting_2"/"collected_2" ("verifying"/
"verified"). The "run.status" audit events' `from`/`to` are renamed the same way, so
history and code speak one vocabulary. Backward restores the old words by the run's kind."""

from django.db import migrations, models

COMMON = {"pairing": "preparing", "paired": "prepared"}
# BISON has two crowd stages; the other flows one, which borrowed BISON's stage-3 words.
FORWARD = {
    "bison": {
        **COMMON,
        "selecting": "collecting",
        "selected": "collected",
        "verifying": "collecting_2",
        "verified": "collected_2",
    },
    None: {
        **COMMON,
        "selecting": "collecting",
        "selected": "collected",
        "verifying": "collecting",
        "verified": "collected",
    },
}
BACKWARD = {
    "bison": {new: old for old, new in FORWARD["bison"].items()},
    None: {
        "preparing": "pairing",
        "prepared": "paired",
        "collecting": "verifying",
        "collected": "verified",
        "collecting_2": "verifying",
        "collected_2": "verified",
    },
}


def _rename(apps, table: dict) -> None:
    Run = apps.get_model("annotation", "Run")
    Event = apps.get_model("annotation", "Event")
    for kind in Run.objects.values_list("kind", flat=True).distinct():
        words = table.get(kind, table[None])
        runs = Run.objects.filter(kind=kind)
        for old, new in words.items():
            runs.filter(status=old).update(status=new)
        events = Event.objects.filter(action="run.status", run__kind=kind)
        for event in events.iterator():
            data = dict(event.data)
            for key in ("from", "to"):
                if data.get(key) in words:
                    data[key] = words[data[key]]
            if data != event.data:
                Event.objects.filter(pk=event.pk).update(data=data)


def forward(apps, schema_editor) -> None:
    _rename(apps, FORWARD)


def backward(apps, schema_editor) -> None:
    _rename(apps, BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0022_hit_images")]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[
                    ("created", "Created"),
                    ("preparing", "Preparing: the flow's machine step runs"),
                    ("prepared", "Prepared: items ready for the crowd"),
                    ("collecting", "Collecting: a batch is on offer"),
                    ("collected", "Collected: no batch on offer"),
                    ("collecting_2", "Collecting, second crowd stage: a batch is on offer"),
                    ("collected_2", "Collected, second crowd stage: no batch on offer"),
                    ("exported", "Exported"),
                    ("failed", "Failed"),
                ],
                default="created",
                max_length=20,
            ),
        ),
        migrations.RunPython(forward, backward),
    ]
