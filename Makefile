# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
PYTEST_ARGS ?=
# `make run` is a local demo: its backends and webhooks may reach this machine (a local model
# server such as Ollama or LM Studio). A deployment sets its own list, or none (README).
OUTBOUND_ALLOW ?= 127.0.0.1,::1,localhost
# What mypy checks (pyproject.toml [tool.mypy]); the rest joins as it gets typed.
TYPED ?= sessions_app/tools sessions_app/runs sessions_app/acp sessions_app/mcp sessions_app/rows.py sessions_app/transcript.py

.PHONY: install run test lint typecheck fmt migrations-check bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	OPENCLAW_OUTBOUND_ALLOW="$${OPENCLAW_OUTBOUND_ALLOW-$(OUTBOUND_ALLOW)}" PORT=$(PORT) $(PY) manage.py serve

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

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
