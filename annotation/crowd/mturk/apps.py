from django.apps import AppConfig


class MTurkCrowdConfig(AppConfig):
    """Amazon Mechanical Turk (legacy): its client, fees, publishing, frame page, sync,
    reconciliation, commands and tasks."""

    name = "annotation.crowd.mturk"
    label = "crowd_mturk"
    verbose_name = "Amazon Mechanical Turk (legacy)"

    def ready(self) -> None:
        from annotation.crowd.mturk.provider import MTurkProvider
        from annotation.providers import provider_register
        from annotation.services.jobs.job_recovery import JobSteps, job_steps_register

        provider_register(MTurkProvider())
        job_steps_register(JobSteps(name="mturk.publish", start="mturk.publish"))
