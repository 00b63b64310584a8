# Each target makes .venv on first use and installs the project with the versions in constraints.txt.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/research-mcp serve

test: lint
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check research_mcp tests bench
	$(BIN)/ruff format --check research_mcp tests bench
	$(BIN)/mypy research_mcp

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV)
