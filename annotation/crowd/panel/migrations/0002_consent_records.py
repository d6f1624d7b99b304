from django.db import migrations


def participant_consents(apps, schema_editor):  # type: ignore[no-untyped-def]
    """Panel participants who consented before the core's consent table existed keep their
    record there: one row per participant's accepted version and time."""
    Participant = apps.get_model("crowd_panel", "Participant")
    Consent = apps.get_model("annotation", "Consent")
    Consent.objects.bulk_create(
        [
            Consent(
                run_id=p.run_id,
                worker_id=p.worker_id,
                version=p.consent_version,
                accepted_at=p.consented_at,
            )
            for p in Participant.objects.only(
                "run_id", "worker_id", "consent_version", "consented_at"
            )
        ],
        batch_size=5000,
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("crowd_panel", "0001_initial"),
        ("annotation", "0028_consent_records"),
    ]

    operations = [migrations.RunPython(participant_consents, migrations.RunPython.noop)]
