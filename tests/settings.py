"""The test process's settings: the project's (`config.settings`), with one change, that a
transactional test's flush deletes rows instead of truncating tables (`db_flush/base.py`:
0.5 s a test saved). The processes the tests start (servers, workers, drivers) read
`config.settings` itself: the environment names it again for them."""

import os

from config.settings import *  # noqa: F403
from config.settings import DATABASES

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "tests.db_flush"
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
