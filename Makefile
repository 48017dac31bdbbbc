# The front door. `make demo` and `make test` set everything up on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# Defaults that let the embedded demo and a laptop run without any configuration; every one can
# be overridden from the environment. The keys are the sandbox's test keys, never live ones.
export RECON_GATEWAY_API_KEY ?= ak_test_recon
export RECON_COMPANY_API_KEY ?= ck_test_recon
export RECON_ADMIN_TOKEN ?= demo-admin-token-change-me

#: Provider presets other than our first guesses (sandbox/variants.py). `make test` runs the suites
#: whose outcome depends on the provider's "not shown" choices once more under each of them.
VARIANTS ?= standard sparse
#: Those suites: the client contract suite, the worker suite, the receiver end to end, the demo;
#: of them, only the tests that play a provider (marked `provider_variant` by tests/conftest.py).
VARIANT_SUITES := tests/integration/upstream tests/integration/workers \
	tests/integration/app/test_end_to_end.py tests/e2e/test_demo.py
#: Test processes: half as many again as the machine has cores, since most tests wait on a
#: subprocess, a server or the disk (on 2 cores, 2 processes keep them about half busy), and at
#: most 8, the Redis logical databases tests/conftest.py hands out (two each, of 16).
#: `make test PYTEST_WORKERS=0` runs the suite in this one process (a debugger, a bisect). Every
#: run lists its 20 slowest tests, so a test that grows is seen the day it does.
PYTEST_WORKERS ?= $(shell n=$$(( $$(nproc) * 3 / 2 )); echo $$(( n > 8 ? 8 : (n < 1 ? 1 : n) )))
PYTEST_RUN := $(BIN)/pytest -n $(PYTEST_WORKERS) --durations=20
#: The preset `make demo` and `make sandbox` play; `make demo VARIANT=standard` plays another.
VARIANT ?= recon
#: Where `make sandbox` listens: the port in RECON_GATEWAY_URL and RECON_COMPANY_URL (README,
#: "Ports"); `make sandbox SANDBOX_PORT=9090` when 8080 is taken.
SANDBOX_PORT ?= 8080

.PHONY: demo console test test-variants lint fmt venv clean migration bench-receiver bench-catchup bench-reconcile sandbox

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	RECON_SANDBOX_VARIANT=$(VARIANT) $(BIN)/recon demo

# The demo's scenario, then recon and the sandbox stay up with the operator console open.
console: $(STAMP)
	RECON_SANDBOX_VARIANT=$(VARIANT) $(BIN)/recon demo --serve

test: $(STAMP)
	RECON_SANDBOX_VARIANT=recon $(PYTEST_RUN)
	$(MAKE) --no-print-directory test-variants

test-variants: $(STAMP)
	set -e; for variant in $(VARIANTS); do \
		echo "== provider variant: $$variant"; \
		RECON_SANDBOX_VARIANT=$$variant $(PYTEST_RUN) -m provider_variant $(VARIANT_SUITES); \
	done

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

sandbox: $(STAMP)
	$(BIN)/recon sandbox --port $(SANDBOX_PORT) --variant $(VARIANT)

bench-receiver: $(STAMP)
	$(BIN)/python bench/receiver.py

bench-catchup: $(STAMP)
	$(BIN)/python bench/catchup.py

bench-reconcile: $(STAMP)
	$(BIN)/python bench/reconcile.py

# A change to the schema is a new migration, generated from the models against a store at head:
# `make migration NAME=what_changed`. Migrations already released are never edited
# (tests/integration/test_migration_history.py keeps them as they were released).
migration: $(STAMP)
	@test -n "$(NAME)" || { echo "usage: make migration NAME=what_changed" >&2; exit 2; }
	rm -f /tmp/recon-migration.db
	DATABASE_URL=sqlite:////tmp/recon-migration.db $(BIN)/alembic -c migrations/alembic.ini upgrade head
	DATABASE_URL=sqlite:////tmp/recon-migration.db $(BIN)/alembic -c migrations/alembic.ini \
		revision --autogenerate -m "$(NAME)" \
		--rev-id $$(printf '%04d' $$(( $$(ls migrations/versions/[0-9]*.py | wc -l) + 1 )))
	$(BIN)/ruff format migrations/versions >/dev/null

clean:
	rm -rf $(VENV) .recon .pytest_cache .mypy_cache .ruff_cache
