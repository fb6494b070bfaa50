# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: install install-test run check test lint typecheck bench vectors clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(TEST_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

run: $(STAMP)
	$(BIN)/sizing serve

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

# The inner loop while editing: lint, types and the unit tests (no `slow` or `e2e` marker).
check: $(TEST_STAMP) lint typecheck
	$(BIN)/python -m pytest -q -m "not slow and not e2e"

# Everything CI runs: lint, types and the whole suite.
test: $(TEST_STAMP) lint typecheck
	$(BIN)/python -m pytest

# After editing knowledge/articles: re-embed them into the vectors shipped with the package.
vectors: $(STAMP)
	$(BIN)/python -m knowledge.build_vectors

bench: $(STAMP)
	$(BIN)/python benchmarks/accuracy.py
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/latency.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
