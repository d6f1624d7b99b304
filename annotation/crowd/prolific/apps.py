from django.apps import AppConfig


class ProlificCrowdConfig(AppConfig):
    """Prolific: its client, fees, studies, the participant's arrival and completion,
    synchronisation by polling and by webhook, review, bonuses, commands and tasks."""

    name = "annotation.crowd.prolific"
    label = "crowd_prolific"
    verbose_name = "Prolific"

    def ready(self) -> None:
        from annotation.crowd.prolific.provider import ProlificProvider
        from annotation.providers import provider_register
        from annotation.services.jobs.job_recovery import JobSteps, job_steps_register

        provider_register(ProlificProvider())
        job_steps_register(JobSteps(name="prolific.publish", start="prolific.publish"))
