"""The panel's test double: the participants' player (`player.py`), re-exported for the callers
that import it from here."""

from tests.annotation.crowd.panel.player import PanelDriver

__all__ = ["PanelDriver"]
