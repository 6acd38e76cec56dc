# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
PYTEST_ARGS ?=
# The suite mostly waits (servers starting, workers, timeouts), so it runs in parallel workers,
# more than the cores (docs/testing.md has the figures). PYTEST_WORKERS=0 (or PYTEST_ARGS="-n0
# ...") runs it in this one process.
PYTEST_WORKERS ?= 3
# `make run` is a local demo: its backends and webhooks may reach this machine (a local model
# server such as Ollama or LM Studio). A deployment sets its own list, or none (README).
OUTBOUND_ALLOW ?= 127.0.0.1,::1,localhost
# What mypy checks (pyproject.toml [tool.mypy]): all of the app's code.
TYPED ?= sessions_app policies_app openclaw_common

# pip's output, and migrate's and seed_demo's: kept here, shown (the tail) only when a step fails.
INSTALL_LOG ?= var/install.log
RUN_LOG ?= var/run.log

.PHONY: install run test lint typecheck fmt migrations-check bench clean

# $(call quietly,log,what,command): one line saying what, the command's output to the log (made
# anew); on failure the log's tail and where the rest is.
quietly = mkdir -p $(dir $(1)); echo "$(2) (log: $(1))"; { $(3); } >$(1) 2>&1 || { status=$$?; \
	echo "$(2) failed; the end of $(1):" >&2; tail -n 25 $(1) >&2; exit $$status; }

# Two stamps: what running needs (`make run`), and that plus the dev extras (tests, linters,
# playwright: several times the download) for everything else. The dev install is a superset,
# so it stamps both. (pip's --no-compile saved 10 s of the install and cost 15 s more at the
# first start, measured: the server and the worker each compile what they import.)
# What running needs is installed by uv, itself from PyPI into the venv (so Python 3.11 is still
# all it takes): it downloads in parallel and compiles on both cores, half pip's time and CPU
# on a fresh machine, measured (README). uv reads no pip.conf: where it cannot install (an index
# only pip is configured for), pip does.
$(VENV)/.installed: pyproject.toml
	@$(call quietly,$(INSTALL_LOG),Installing what running needs into $(VENV),test -x $(PY) || $(PYTHON) -m venv $(VENV); { $(PY) -m pip install --disable-pip-version-check uv && $(PY) -m uv pip install --python $(PY) --compile-bytecode -e .; } || $(PY) -m pip install --disable-pip-version-check -e .)
	@touch $@

$(VENV)/.installed-dev: pyproject.toml
	@$(call quietly,$(INSTALL_LOG),Installing the project and its dev extras into $(VENV),test -x $(PY) || $(PYTHON) -m venv $(VENV); $(PY) -m pip install --disable-pip-version-check -e '.[dev]')
	@touch $(VENV)/.installed $@

# Everything (CI's first step: its tests and lint then run side by side without installing).
install: $(VENV)/.installed-dev

run: $(VENV)/.installed
	@$(call quietly,$(RUN_LOG),Migrating the database and loading the demo,$(PY) manage.py seed_demo --migrate)
	@OPENCLAW_OUTBOUND_ALLOW="$${OPENCLAW_OUTBOUND_ALLOW-$(OUTBOUND_ALLOW)}" PORT=$(PORT) $(PY) manage.py serve --demo-login

# `--dist load` hands the tests out in pytest-django's order (the transactional tests, whose
# flush removes what the migrations made, after all the others), so each worker keeps it.
test: install
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist load $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run
	@$(MAKE) --no-print-directory typecheck

typecheck: install
	$(PY) -m mypy $(TYPED)

fmt: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

migrations-check: install
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var
