"""Every periodic task the beat schedule names is a task the worker knows (a renamed or moved
task would otherwise be sent and dropped silently)."""

from django.conf import settings


def test_every_scheduled_task_is_registered():
    from config.celery import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"crowd.sync_open", "jobs.recover", "assignments.auto_approve"} <= scheduled
    assert scheduled <= set(app.tasks)
    # The names queued messages of earlier versions carry still have a task.
    assert {"mturk.sync_open", "mturk.publish", "prolific.publish"} <= set(app.tasks)


def test_one_provider_failing_does_not_stop_the_others(monkeypatch, caplog):
    from annotation import tasks
    from annotation.providers import provider_for

    seen = []
    monkeypatch.setattr(provider_for("mturk"), "sync_open", lambda: 1 / 0)
    monkeypatch.setattr(provider_for("prolific"), "sync_open", lambda: seen.append("prolific"))
    monkeypatch.setattr(
        "annotation.services.work.reoffer.hits_reoffer_all", lambda: seen.append("reoffer")
    )
    tasks.crowd_sync_open_task()
    assert seen == ["prolific", "reoffer"]
    assert "synchronising mturk failed" in caplog.text
