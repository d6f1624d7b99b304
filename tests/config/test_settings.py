"""Settings are safe by default: each case runs Django in a fresh process with only the
environment a user would set."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What docs/operations.md documents for a deployment behind an HTTPS proxy.
PRODUCTION = {
    "DATABASE_URL": "postgres://crowdvl@127.0.0.1:5432/crowdvl",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
    "DJANGO_ALLOWED_HOSTS": "crowd.example.org",
    "CROWDVL_PUBLIC_URL": "https://crowd.example.org",
    "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO",
}
SETTINGS = [
    "DEBUG",
    "SECRET_KEY",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_PROXY_SSL_HEADER",
]


def django(args, **extra):
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "CROWDVL_", "TEST_"))
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**keep, **extra},
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_in(**extra):
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        f"print(json.dumps({{k: getattr(s, k, None) for k in {SETTINGS!r}}}))"
    )
    done = django(["-c", code], DJANGO_SETTINGS_MODULE="config.settings", **extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_check_deploy_reports_nothing_with_the_documented_production_environment():
    done = django(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        **PRODUCTION,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout and "WARNING" not in done.stderr


def test_production_defaults_are_secure():
    values = settings_in(DJANGO_SECRET_KEY=secrets.token_urlsafe(50), **PRODUCTION)
    assert values["DEBUG"] is False
    assert values["SECURE_SSL_REDIRECT"] and values["SESSION_COOKIE_SECURE"]
    assert values["CSRF_COOKIE_SECURE"] and values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["CSRF_TRUSTED_ORIGINS"] == ["https://crowd.example.org"]
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    # Each can be turned off where TLS is not in front (e.g. a lab's internal network).
    relaxed = settings_in(
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_SECURE_HSTS_SECONDS="0",
        **PRODUCTION,
    )
    assert relaxed["SECURE_SSL_REDIRECT"] is False and relaxed["SECURE_HSTS_SECONDS"] == 0


def test_a_deployment_without_a_secret_key_refuses_to_start():
    done = django(["manage.py", "check"], **PRODUCTION)
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in done.stderr


def test_nothing_set_means_debug_off_and_a_random_key_per_installation(tmp_path):
    first = settings_in(CROWDVL_VAR_DIR=str(tmp_path / "a"))
    again = settings_in(CROWDVL_VAR_DIR=str(tmp_path / "a"))
    other = settings_in(CROWDVL_VAR_DIR=str(tmp_path / "b"))
    assert first["DEBUG"] is False and first["SECURE_SSL_REDIRECT"] is False  # local http
    assert first["SECRET_KEY"] == again["SECRET_KEY"] != other["SECRET_KEY"]
    assert len(first["SECRET_KEY"]) >= 50 and "insecure" not in first["SECRET_KEY"]
    assert (tmp_path / "a" / "secret_key").stat().st_mode & 0o077 == 0  # owner-only


def test_debug_is_on_only_when_asked_and_bad_flags_are_refused(tmp_path):
    assert settings_in(CROWDVL_VAR_DIR=str(tmp_path), DJANGO_DEBUG="1")["DEBUG"] is True
    done = django(["manage.py", "check"], CROWDVL_VAR_DIR=str(tmp_path), DJANGO_DEBUG="yes")
    assert done.returncode != 0 and "DJANGO_DEBUG must be 0 or 1" in done.stderr


def test_server_processes_share_the_cache_when_one_is_configured():
    """With CROWDVL_CACHE_URL (docs/operations.md), each server process reaches the same Redis:
    a rate limit is spent across processes and what one process stores the next reads, through
    the backend the settings name (django-redis), against the real server."""
    scope, key = "panel-arrival", secrets.token_hex(8)  # a fresh counter: no other run shares it
    code = (
        "import django, json, sys; django.setup(); from django.conf import settings as s; "
        "from django.core.cache import cache; from annotation.ratelimit import rate_allow; "
        "limit = int(s.CROWDVL_RATE_LIMITS[sys.argv[1]]); "
        "allowed = [rate_allow(sys.argv[1], sys.argv[2], now=0.0) for _ in range(limit - 1)]; "
        "before = cache.get('crowdvl:test:' + sys.argv[2]); "
        "cache.set('crowdvl:test:' + sys.argv[2], {'worker': 7, 'seen': [1, 2]}, 60); "
        "print(json.dumps([s.CACHES['default']['BACKEND'], s.SESSION_ENGINE, all(allowed), "
        "rate_allow(sys.argv[1], sys.argv[2], now=0.0), before]))"
    )
    env = {
        **PRODUCTION,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "CROWDVL_CACHE_URL": "redis://127.0.0.1:6379/11",
    }
    runs = []
    for _ in range(2):  # one server process after another
        done = django(["-c", code, scope, key], DJANGO_SETTINGS_MODULE="config.settings", **env)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    (backend, engine, first_allowed, last_allowed, before), second = runs
    assert backend == "django_redis.cache.RedisCache"
    assert engine == "django.contrib.sessions.backends.cached_db"
    assert first_allowed and last_allowed and before is None  # the limit reached, not passed
    # The second process finds the first's count: its requests are over the limit.
    assert second[2:] == [False, False, {"worker": 7, "seen": [1, 2]}]
