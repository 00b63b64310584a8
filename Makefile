# Each target makes .venv on first use and installs the project with the versions in constraints.txt.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test test-stress coverage lint bench clean browser view view-types ts-client

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# stdout is the protocol channel of a host that starts `make run`: nothing but the server writes
# there (an install that a changed pyproject.toml triggers reports on stderr; make echoes nothing).
run:
	@$(MAKE) --no-print-directory $(STAMP) >&2
	@exec $(BIN)/research-mcp serve

test: lint browser ts-client
	$(BIN)/python -m pytest -q

# Extra pytest arguments for test-stress and coverage, e.g. PYTEST_ARGS=tests/server/test_startup.py.
PYTEST_ARGS ?=
STRESS_RUNS ?= 3

# The suite with every core kept busy (a Python busy loop per core, scripts/busy_cores.py, ended
# with the runs), STRESS_RUNS times in a row, each run timed; stops at the first run that fails.
test-stress: $(STAMP)
	$(BIN)/python scripts/busy_cores.py --runs $(STRESS_RUNS) -- $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The suite under coverage.py, the 15 slowest tests named, then the lines run per package
# (scripts/coverage_by_package.py; --missing answering storage server lists the lines never run).
coverage: $(STAMP)
	$(BIN)/python -m pytest -q --cov --cov-report= --durations=15 $(PYTEST_ARGS)
	$(BIN)/python scripts/coverage_by_package.py

lint: $(STAMP)
	$(BIN)/ruff check research_mcp tests bench
	$(BIN)/ruff format --check research_mcp tests bench
	$(BIN)/mypy research_mcp
	$(BIN)/lint-imports --no-cache --no-logo

# Best effort: Debian's chromium for the tests that render an exported HTML report and the MCP App view; never fails the build.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && \
	      apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; }; \
	  fi; \
	  command -v chromium >/dev/null 2>&1 || \
	    echo "chromium is not installed and cannot be: the browser tests (exported HTML, the MCP App view) will be skipped"; \
	}

# Best effort: the TypeScript SDK (pinned in tests/server/ts_client/package.json) for the test that has
# its client validate every result against the output schemas; skipped without Node.js or the registry.
ts-client:
	@command -v npm >/dev/null 2>&1 && (cd tests/server/ts_client && npm ci --no-audit --no-fund --silent >/dev/null 2>&1) || \
	  echo "the TypeScript SDK could not be installed: its conformance test will be skipped"

# The MCP App view (web/view) built into one self-contained HTML file, committed at
# research_mcp/server/view/run.html: Node is needed only to rebuild it, never to run the server.
view: view-types
	cd web/view && npm ci --no-audit --no-fund && npm run build

# The view's TypeScript types (web/view/src/snapshot.ts) written from the JSON Schema of RunView;
# tests/server/test_view_types.py fails when the checked-in file differs.
view-types: $(STAMP)
	$(BIN)/python scripts/view_types.py

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV)
