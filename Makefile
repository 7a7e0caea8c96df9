# `make run` and `make test` work on a fresh machine with Python 3.11: they create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
RUN_STAMP := $(VENV)/.installed-run
# Empty: the broker's own defaults ([::]:5672, dual-stack), or what rabbitmq.conf / the environment say.
HOST ?=
PORT ?=
PYTEST_ARGS ?=
# The modules setup.py compiles with mypyc (its MYPYC_MODULES): a change to one rebuilds them in place, so an
# extension never runs older code than its source (protocol/compiled.py also checks, and falls back to pure).
MYPYC_SOURCES := $(shell sed -n '/^MYPYC_MODULES = \[/,/^\]/s/^ *"\(.*\.py\)",/\1/p' setup.py)
# The suites that run a second time on the pure-Python variant (WARRENMQ_PURE=1): those that exercise the
# compiled modules directly (codecs, routing, queues) and the sessions over them.
PURE_TESTS ?= tests/unit/protocol tests/unit/core tests/unit/journal/test_lane.py tests/property tests/component

.PHONY: run test lint typecheck contracts pytest pytest-pure bench benchmarks clean ui ui-test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# `make run` installs what the broker needs and nothing else (no dev tools, no journal or analytics extras:
# `pip install -e '.[journal]'` adds Parquet for the journal); `make test` and the tools install everything.
# Both also build the native parts (setup.py): the journal's C lane, the wire loops (protocol/_wire.c) and the
# mypyc-compiled modules.
$(RUN_STAMP): pyproject.toml setup.py broker/journal/_lane.c protocol/_wire.c $(MYPYC_SOURCES) | $(PY)
	$(PY) -m pip install -q -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml setup.py broker/journal/_lane.c protocol/_wire.c $(MYPYC_SOURCES) | $(PY)
	$(PY) -m pip install -q -e '.[dev,journal,analytics]'
	touch $(STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/warrenmq serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

lint: $(STAMP)
	bash -n .ci/run
	$(VENV)/bin/ruff check protocol broker tests benchmarks examples setup.py perf/compare.py perf/ab.py perf/journal_cost.py perf/access_cost.py perf/scale.py perf/variants.py
	$(VENV)/bin/ruff format --check protocol broker tests benchmarks examples setup.py perf/compare.py perf/ab.py perf/journal_cost.py perf/access_cost.py perf/scale.py perf/variants.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy examples

contracts: $(STAMP)
	$(VENV)/bin/lint-imports

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The same checks on the pure-Python variant of the compiled modules, which serves where no compiler is.
pytest-pure: $(STAMP)
	WARRENMQ_PURE=1 $(PY) -m pytest -q $(PURE_TESTS)

# The web UI (ui/): `make ui` rebuilds the committed assets in broker/management/ui/dist from the lockfile;
# `make ui-test` type-checks, runs the front end's unit tests and checks the committed build is current.
ui/node_modules/.package-lock.json: ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund

ui: ui/node_modules/.package-lock.json
	cd ui && npm run build

ui-test: ui/node_modules/.package-lock.json
	cd ui && npm run check && npm test
	rm -rf .ui-build-check && cd ui && UI_OUT_DIR=../.ui-build-check npm run build >/dev/null
	diff -r .ui-build-check broker/management/ui/dist || (echo "broker/management/ui/dist is stale: run make ui and commit it" && exit 1)
	rm -rf .ui-build-check

test: lint typecheck contracts ui-test pytest pytest-pure

# Routing-core and codec microbenchmarks (pytest-benchmark); reported, never asserted as times.
bench: $(STAMP)
	$(PY) -m pytest benchmarks -p no:cacheprovider --benchmark-columns=mean,stddev,ops,rounds --benchmark-sort=name

# Side-by-side broker comparison with amqpperf (needs librabbitmq-dev, amqp-tools, rabbitmq-server and garagemq);
# rewrites the table between the markers in docs/benchmarks.md.
benchmarks: $(STAMP)
	$(PY) perf/compare.py --output docs/benchmarks.md

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
	rm -rf build
	rm -f broker/journal/_lane.*.so protocol/native__mypyc.*.so protocol/_compiled.json
	rm -f $(foreach source,$(MYPYC_SOURCES),$(source:.py=).*.so)
