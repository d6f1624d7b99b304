from django.apps import AppConfig


class LocalCrowdConfig(AppConfig):
    """Invited local workers: invitation links, consent, the worker pages on this server."""

    name = "annotation.crowd.local"
    label = "crowd_local"
    verbose_name = "Local workers"

    def ready(self) -> None:
        from annotation.crowd import provider_register
        from annotation.crowd.local.provider import LocalProvider

        provider_register(LocalProvider())
