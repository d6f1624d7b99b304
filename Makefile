# Two commands: `make demo` and `make test`. Both create .venv and install what is missing.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export OPENBLAS_CORETYPE ?= Haswell

# Test processes side by side (pytest-xdist; each with its own test database, test_crowdvl_gwN).
TEST_WORKERS ?= auto
# Tests and CI talk to real PostgreSQL and Redis on localhost.
TEST_ENV := DATABASE_URL=$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/crowdvl} \
            CELERY_BROKER_URL=$${TEST_CELERY_BROKER_URL:-redis://127.0.0.1:6379/15} \
            DJANGO_ALLOW_ASYNC_UNSAFE=true

.PHONY: demo test lint pytest bench bench-import bench-redundancy bench-load bench-startup quality screenshots serve serve-prod worker clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is required: '$(PYTHON)' was not found (set PYTHON=...)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,encoders]'
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) manage.py demo

test: $(STAMP)
	scripts/ensure_services.sh
	scripts/ensure_chromium.sh
	scripts/ensure_compose.sh
	@# Bytecode written once: the tests' subprocesses (servers, workers, demos) then read it
	@# even where PYTHONDONTWRITEBYTECODE is set, instead of compiling the project each start.
	$(PY) -m compileall -q annotation config pipeline
	@# Whole files to each process in collection order, the files marked `long` first
	@# (tests/conftest.py), not xdist's default of the files with the most tests first, which
	@# left the minutes-long end-to-end files to the end, one process working while the other waited.
	@# Lint beside the tests (one core's work while the tests wait on their servers); the
	@# command fails if either does, lint's output printed after the tests'.
	@$(MAKE) --no-print-directory lint > $(VENV)/lint.log 2>&1 & lint=$$!; \
	$(TEST_ENV) $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); tests=$$?; \
	wait $$lint; linted=$$?; cat $(VENV)/lint.log; \
	if [ $$linted -ne 0 ]; then echo "lint failed"; fi; \
	[ $$tests -eq 0 ] && [ $$linted -eq 0 ]

pytest: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	DJANGO_DEBUG=1 $(PY) manage.py makemigrations --check --dry-run
	DJANGO_DEBUG=1 $(PY) manage.py spectacular --validate --fail-on-warn --file /dev/null

bench: $(STAMP)
	$(PY) benchmarks/stage1_neighbours.py

# COCO import against a bare COPY of the same rows (PostgreSQL; val2014-size and 5x).
# BENCH_IMPORT_DB names its scratch database (created and dropped): one per concurrent run.
bench-import: $(STAMP)
	scripts/ensure_services.sh
	$(PY) benchmarks/import_coco.py --database-url $${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} --database-name $${BENCH_IMPORT_DB:-crowdvl_bench_import} --scales 1,5

# Adaptive against fixed redundancy on the simulated world (table and a plot).
bench-redundancy: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/adaptive_redundancy.py

# The worker's path under load (gunicorn, PostgreSQL, Redis) against a bare DRF endpoint.
bench-load: $(STAMP)
	scripts/ensure_services.sh
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/worker_load.py --database-url $${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}

# How long a manage.py command takes to start against a bare Django project (median of 7 runs;
# a throw-away embedded installation).
bench-startup: $(STAMP)
	$(PY) benchmarks/command_startup.py

# Quality against the simulated world's known truth (manage.py quality_sweep on the sample, in a
# throw-away embedded installation); the table goes to benchmarks/results/quality_sweep.txt.
quality: $(STAMP)
	@tmp=$$(mktemp -d); \
	CROWDVL_VAR_DIR=$$tmp $(PY) manage.py quality_sweep $(QUALITY_ARGS) > benchmarks/results/quality_sweep.txt; \
	status=$$?; rm -rf $$tmp; cat benchmarks/results/quality_sweep.txt; exit $$status

# Screenshots of the console for docs/screenshots/ (from the demo's database: make demo first).
screenshots: $(STAMP)
	scripts/ensure_chromium.sh
	scripts/ensure_compose.sh
	$(PY) scripts/screenshots.py

# The console for a lab on the embedded default: DEBUG on, the web server, and one Celery
# worker with the beat scheduler on the file-based broker in var/broker/ (ADDR=0.0.0.0:8000
# to serve the lab's network; set CROWDVL_PUBLIC_URL to the address workers use).
ADDR ?= 127.0.0.1:8000
# Where `make serve-prod` binds gunicorn (BIND=0.0.0.0:8080 ...).
BIND ?= 127.0.0.1:8000
serve: $(STAMP)
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} CELERY_BROKER_URL=$${CELERY_BROKER_URL:-filesystem://} \
	$(PY) manage.py serve $(ADDR)

# Production web server (set the environment docs/operations.md lists first).
serve-prod: $(STAMP)
	$(PY) manage.py migrate && $(PY) manage.py collectstatic --noinput && \
	$(VENV)/bin/gunicorn config.wsgi -b $(BIND) -w 4 --access-logfile -

# The beat schedule lives in var/ (ignored), never in the checkout.
worker: $(STAMP)
	mkdir -p var
	$(VENV)/bin/celery -A config worker -B -s var/celerybeat-schedule -l info

clean:
	rm -rf var .pytest_cache
