"""docker-compose.yml for users with a Docker engine (none here): services start in order
(db and redis healthy, then web, then the worker), image folders and imports are mounted
read-only where the settings look for them, and web's health check passes against the app
that allows only the installation's host names (as in production)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_start_in_order_on_health():
    services = COMPOSE["services"]
    for name in ("db", "redis", "web"):
        assert services[name]["healthcheck"]["test"], name
    assert services["web"]["depends_on"] == {
        "db": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert services["worker"]["depends_on"]["web"] == {"condition": "service_healthy"}


def test_image_folders_and_imports_are_mounted_where_the_settings_look():
    env = COMPOSE["services"]["web"]["environment"]
    mounts = COMPOSE["services"]["worker"]["volumes"]
    assert f"${{CROWDVL_HOST_IMPORT_DIR:-./import}}:{env['CROWDVL_IMPORT_DIR']}:ro" in mounts
    assert f"${{CROWDVL_HOST_IMAGE_DIR:-./images}}:{env['CROWDVL_IMAGE_DIRS']}:ro" in mounts
    assert mounts == COMPOSE["services"]["web"]["volumes"]


@pytest.mark.django_db
def test_the_web_health_check_passes_on_an_app_allowing_only_its_host_names(live_server, settings):
    settings.ALLOWED_HOSTS = ["crowd.example.org"]
    command = COMPOSE["services"]["web"]["healthcheck"]["test"]
    assert command[:3] == ["CMD", "python", "-c"]
    code = command[3].replace("http://127.0.0.1:8000", live_server.url)
    env = {**os.environ, "DJANGO_ALLOWED_HOSTS": "crowd.example.org,www.example.org"}
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 0
    # The same check without an allowed host name is refused (400), as a naive one would be.
    naive = code.replace("'Host': host, ", "")
    failed = subprocess.run([sys.executable, "-c", naive], env=env, capture_output=True, timeout=60)
    assert failed.returncode != 0


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose not installed")
def test_compose_config_is_valid():
    env = {
        **os.environ,
        "POSTGRES_PASSWORD": "x",
        "DJANGO_SECRET_KEY": "y" * 50,
        "DJANGO_ALLOWED_HOSTS": "crowd.example.org",
        "CROWDVL_PUBLIC_URL": "https://crowd.example.org",
    }
    subprocess.run(["docker-compose", "config", "-q"], cwd=ROOT, env=env, check=True)


def test_the_image_has_the_encoders_extra_and_make_keeps_the_checkout_clean():
    """Issue 46: the Dockerfile lacked the encoders extra; `make worker` wrote its beat
    schedule into the checkout; `make serve-prod` bound a fixed port."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG EXTRAS=encoders" in dockerfile and '".[${EXTRAS}]"' in dockerfile
    assert "download.pytorch.org/whl/cpu" in dockerfile  # never the CUDA build
    makefile = (ROOT / "Makefile").read_text()
    worker = makefile.split("\nworker:", 1)[1].split("\n\n", 1)[0]
    assert "-s var/celerybeat-schedule" in worker
    assert "celerybeat-schedule" in (ROOT / ".gitignore").read_text()
    serve_prod = makefile.split("\nserve-prod:", 1)[1].split("\n\n", 1)[0]
    assert "-b $(BIND)" in serve_prod and "127.0.0.1:8000" not in serve_prod
