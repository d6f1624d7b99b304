"""Test doubles of the crowd providers: the contract tests' players (one package per provider,
`<provider>/player.py` with `driver(http)`), the shared server-side player (`testing.py`) and
the stand-in of Prolific's HTTP API (`prolific/standin.py`). Issue 49 moved them here out of the
production packages."""
