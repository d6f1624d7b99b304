from django.apps import AppConfig


class LocalCrowdConfig(AppConfig):
    """Invited local workers: invitation links, consent, the worker pages on this server."""

    name = "annotation.crowd.local"
    label = "crowd_local"
    verbose_name = "Local workers"

    def ready(self) -> None:
        from annotation.crowd.local.provider import LocalProvider
        from annotation.providers import provider_register

        provider_register(LocalProvider())
