# npuir developer commands.  `make run` and `make test` are the two README
# commands: each creates .venv (if needed) and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test

.PHONY: run test lint unit lit install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(STAMP)

## The main job: the seed model through the standard pipeline, then as written, on one
## stream and with auto side by side, with the reasons and the recommended annotation.
run: $(STAMP)
	$(BIN)/npuir-run examples/seed_multistream.mlir --check
	$(BIN)/npuir-advise examples/seed_multistream.mlir

## Every test: lint, types, the import contracts, pytest, lit.
test: lint unit lit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python dev/lint_imports.py

unit: $(STAMP)
	$(BIN)/python -m pytest

lit: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv test

clean:
	rm -rf $(VENV) build *.egg-info
