"""Prolific's test doubles: the participants' player (`player.py`) and the stand-in of its HTTP
API (`standin.py`). The player is re-exported for the callers that import it from here."""

from tests.annotation.crowd.prolific.player import ProlificDriver

__all__ = ["ProlificDriver"]
