# npuir developer commands.  `make run` and `make test` are the two README
# commands: each creates .venv (if needed) and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
EXAMPLE := docs/example-pass
EXAMPLE_STAMP := $(VENV)/.installed-example-pass

.PHONY: run test lint unit lit example-pass install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# npuir/__init__.py holds the version the install records.
$(STAMP): pyproject.toml npuir/__init__.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(STAMP)

## The main job: the seed model through the standard pipeline, then as written, on one
## stream and with auto side by side, with the reasons and the recommended annotation.
run: $(STAMP)
	$(BIN)/npuir-run examples/seed_multistream.mlir --check
	$(BIN)/npuir-advise examples/seed_multistream.mlir

## Every test: lint, types, the import contracts, pytest, lit, the guide's example pass.
test: lint unit lit example-pass

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python dev/lint_imports.py

unit: $(STAMP)
	$(BIN)/python -m pytest

lit: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv test

## docs/writing-a-pass.md's example package, installed as a user would (its
## npuir.passes entry point makes its pass known by name), then its own tests.
$(EXAMPLE_STAMP): $(EXAMPLE)/pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps -e $(EXAMPLE)
	touch $@

example-pass: $(EXAMPLE_STAMP)
	cd $(EXAMPLE) && $(CURDIR)/$(BIN)/python -m pytest
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv $(EXAMPLE)/test

clean:
	rm -rf $(VENV) build *.egg-info $(EXAMPLE)/src/*.egg-info
