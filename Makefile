# `make run` and `make test` work on a fresh machine with Python 3.11: they create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
RUN_STAMP := $(VENV)/.installed-run
# Empty: the broker's own defaults ([::]:5672, dual-stack), or what rabbitmq.conf / the environment say.
HOST ?=
PORT ?=
MANAGEMENT_PORT ?=
PROMETHEUS_PORT ?=
PYTEST_ARGS ?=
# Extra pytest arguments of the pure-Python run alone (make test gives it a longer per-test timeout).
PURE_ARGS ?=
# The modules setup.py compiles with mypyc (its MYPYC_MODULES): a change to one rebuilds them in place, so an
# extension never runs older code than its source (protocol/compiled.py also checks, and falls back to pure).
MYPYC_SOURCES := $(shell sed -n '/^MYPYC_MODULES = \[/,/^\]/s/^ *"\(.*\.py\)",/\1/p' setup.py)
# pytest-xdist workers: every test owns its ports and directories, and each worker starts its own RabbitMQ
# oracles (tests/compat/conftest.py). Three on the 2-core machine: the suites wait on the servers they start
# more than they compute (with two, 0.70 of the 2 cores stayed idle on average), and a clean-clone run took
# 17:44 against 20:47 with two, once the oracles' Erlang VMs stopped busy-waiting (rabbitmq_node.py) and the
# tests that compared timings accepted what either broker does under load. Whole files go to one worker
# (--dist loadfile), so module fixtures start once, and tests/analytics/ as one unit, so its Spark cluster
# starts once; the longest first (tests/schedule.py sorts the collection by the recorded seconds per file;
# --no-loadscope-reorder keeps pytest-xdist from reordering it by number of tests).
TEST_WORKERS ?= 3
# The in-process suites (no server, no oracle): `make test-fast`, and again on the pure-Python variant
# (WARRENMQ_PURE=1) under coverage at the end of `make test`.
FAST_TESTS ?= tests/unit tests/property tests/component
# Set by `make test-repeat` (tests/repeat.py): where each pytest run writes its JUnit XML report.
JUNIT_DIR ?=
N ?= 3

.PHONY: run docs checks test test-fast test-repeat lint typecheck contracts pytest pytest-pure pytest-pure-suites coverage-summary suites bench benchmarks clean ui ui-test

# setuptools 77 or later in the venv too (a venv brings 65): `python setup.py build_ext --inplace` reads
# pyproject.toml's SPDX `license` with it, which older setuptools refuse.
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'setuptools>=77'

# `make run` installs what the broker needs and nothing else (no dev tools, no journal or analytics extras:
# `pip install -e '.[journal]'` adds Parquet for the journal); `make test` and the tools install everything.
# Both also build the native parts (setup.py): the journal's C lane, the wire loops (protocol/_wire.c) and the
# mypyc-compiled modules.
$(RUN_STAMP): pyproject.toml setup.py broker/journal/_lane.c protocol/_wire.c broker/storage/_segment.c $(MYPYC_SOURCES) | $(PY)
	$(PY) -m pip install -q -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml setup.py broker/journal/_lane.c protocol/_wire.c broker/storage/_segment.c $(MYPYC_SOURCES) | $(PY)
	$(PY) -m pip install -q -e '.[dev,journal,analytics]'
	touch $(STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/warrenmq serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT)) \
		$(if $(MANAGEMENT_PORT),--management-port $(MANAGEMENT_PORT)) \
		$(if $(PROMETHEUS_PORT),--prometheus-port $(PROMETHEUS_PORT))

lint: $(STAMP)
	bash -n .ci/run
	$(VENV)/bin/ruff check protocol broker tests benchmarks examples setup.py perf/compare.py perf/ab.py perf/journal_cost.py perf/access_cost.py perf/scale.py perf/variants.py perf/forward_cost.py perf/turn_audit.py perf/amqp10_cost.py perf/amqp10_load.py perf/amqp10_raw.py perf/alloc_probe/sitecustomize.py
	$(VENV)/bin/ruff format --check protocol broker tests benchmarks examples setup.py perf/compare.py perf/ab.py perf/journal_cost.py perf/access_cost.py perf/scale.py perf/variants.py perf/forward_cost.py perf/turn_audit.py perf/amqp10_cost.py perf/amqp10_load.py perf/amqp10_raw.py perf/alloc_probe/sitecustomize.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy examples

contracts: $(STAMP)
	$(VENV)/bin/lint-imports

# Under coverage of the code that runs in the test processes (brokers started as child processes are not
# traced); pytest-pure adds its figures and prints the summary.
pytest: $(STAMP)
	rm -f .coverage .coverage.*
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --cov --cov-report= --cov-fail-under=0 \
		$(if $(JUNIT_DIR),--junitxml=$(JUNIT_DIR)/main.xml) $(PYTEST_ARGS)

# The in-process suites again on the pure-Python variant of the compiled modules, which serves where no
# compiler is, their coverage added to `make pytest`'s (the compiled modules' Python is traced here); then
# tests/coverage_summary.py prints line and branch coverage of protocol/ and broker/ per package and fails
# below the floor in pyproject.toml ([tool.coverage.report] fail_under). The pure run keeps its coverage data
# in a folder of its own until `coverage-summary` adds it to `make pytest`'s, so that `make test` can run the
# two at once (pytest-cov combines every .coverage.* file beside its data file).
PURE_COVERAGE := build/coverage-pure/.coverage
pytest-pure: pytest-pure-suites
	@$(MAKE) --no-print-directory coverage-summary

pytest-pure-suites: $(STAMP)
	rm -rf $(dir $(PURE_COVERAGE)) && mkdir -p $(dir $(PURE_COVERAGE))
	COVERAGE_FILE=$(PURE_COVERAGE) WARRENMQ_PURE=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		--cov --cov-report= --cov-fail-under=0 $(if $(JUNIT_DIR),--junitxml=$(JUNIT_DIR)/pure.xml) $(PURE_ARGS) $(FAST_TESTS)

coverage-summary: $(STAMP)
	$(PY) -m coverage combine --append $(PURE_COVERAGE)
	$(PY) -m tests.coverage_summary

# The edit-test loop: unit, property and component suites on the compiled build, no servers (about a minute).
test-fast: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(FAST_TESTS) $(PYTEST_ARGS)

# The whole suite N times (default 3); names every test that did not pass in every run.
test-repeat: $(STAMP)
	$(PY) -m tests.repeat --runs $(N)

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

# The documentation site (mkdocs.yml, pages in docs/): --strict fails on a broken link or anchor. Built into
# site/, which is gitignored.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir site

# The static checks (ruff, mypy, import-linter, the docs site, the web UI's checks and build).
checks: lint typecheck contracts docs ui-test

# `make suites`: the pure-Python suites run beside the main suites instead of after them. The main suites leave
# part of the two cores idle while they wait on the servers they start (tests/ha used 0.45 of a core over its
# 248 s, tests/durability 0.42 over 152 s, each measured alone with cpuacct), and the pure suites (about 140 s
# of CPU, all in-process) fill it: at nice 10 they take what the main suites leave, and the main suites' tests
# keep the cores they would have had. Niced, a pure test may wait long for a core, so the pure lane's per-test
# timeout is 900 s instead of 120 (nothing in those suites waits on a clock of its own but socket and asyncio
# timeouts of seconds, which a niced process still meets). Its output follows the main suites'; either failing,
# or the coverage floor, fails the target.
suites: $(STAMP)
	@nice -n 10 $(MAKE) --no-print-directory pytest-pure-suites PURE_ARGS=--timeout=900 > .pure.log 2>&1 & pure=$$!; \
	$(MAKE) --no-print-directory pytest; main=$$?; \
	wait $$pure; pure_status=$$?; \
	echo "== the pure-Python suites (make pytest-pure-suites), run beside the main suites:"; cat .pure.log; \
	$(MAKE) --no-print-directory coverage-summary; summary=$$?; \
	[ $$main -eq 0 ] && [ $$pure_status -eq 0 ] && [ $$summary -eq 0 ]

# The static checks run beside the suites too (about 35 s of CPU); their output follows the suites'.
test: $(STAMP)
	@$(MAKE) --no-print-directory checks > .checks.log 2>&1 & checks=$$!; \
	$(MAKE) --no-print-directory suites; suites=$$?; \
	wait $$checks; status=$$?; \
	echo "== static checks (make checks), run beside the suites:"; cat .checks.log; \
	[ $$status -eq 0 ] || echo "== make checks failed: see above"; \
	[ $$suites -eq 0 ] && [ $$status -eq 0 ]

# Routing-core and codec microbenchmarks (pytest-benchmark); reported, never asserted as times.
bench: $(STAMP)
	$(PY) -m pytest benchmarks -p no:cacheprovider --benchmark-columns=mean,stddev,ops,rounds --benchmark-sort=name

# Side-by-side broker comparison with amqpperf (needs librabbitmq-dev, amqp-tools, rabbitmq-server and garagemq);
# rewrites the table between the markers in docs/benchmarks.md.
benchmarks: $(STAMP)
	$(PY) perf/compare.py --output docs/benchmarks.md

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .test-repeat .coverage .coverage.*
	rm -rf build site
	rm -f broker/journal/_lane.*.so broker/storage/_segment.*.so protocol/native__mypyc.*.so protocol/_compiled.json
	rm -f $(foreach source,$(MYPYC_SOURCES),$(source:.py=).*.so)
