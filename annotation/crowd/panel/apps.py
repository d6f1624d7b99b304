from django.apps import AppConfig


class PanelCrowdConfig(AppConfig):
    """Participants sent by a panel's study link: consent, the task pages, completion codes,
    confirmation from the panel's CSV of approved participants, the bonus CSV."""

    name = "annotation.crowd.panel"
    label = "crowd_panel"
    verbose_name = "Panels (CloudResearch Connect, SONA, participant pools)"

    def ready(self) -> None:
        from annotation.crowd.panel.provider import PanelProvider
        from annotation.providers import provider_register

        provider_register(PanelProvider())
