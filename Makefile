# npuir developer commands.  `make run` and `make test` are the two README
# commands: each creates .venv (if needed) and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
ALL_STAMP := $(VENV)/.installed-test-all
# The CPU build: a bare `torch` pulls CUDA wheels (gigabytes) the tests never use.  The
# package index configured for pip serves it; the `torch` extra is a range that keeps it.
TORCH := torch==2.13.0+cpu
EXAMPLE := docs/example-pass
EXAMPLE_STAMP := $(VENV)/.installed-example-pass
CHROMIUM_STAMP := $(VENV)/.installed-chromium
RAY_STAMP := $(VENV)/.installed-ray
# The `ray` extra of pyproject.toml (npuir.executor's `--jobs ray`), installed apart from
# test-all: see $(RAY_STAMP).
RAY := ray>=2.40

.PHONY: run test check lint unit unit-fast lit example-pass install install-all clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# npuir/__init__.py holds the version the install records.
$(STAMP): pyproject.toml npuir/__init__.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# Every optional dependency a test needs (torch, transformers, matplotlib), and
# pytest-xdist and pytest-randomly: the whole suite runs on both cores in a random order.
$(ALL_STAMP): $(STAMP)
	@sh dev/background.sh start chromium $(VENV) sh dev/install_chromium.sh
	$(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[test-all]'
	@sh dev/background.sh start ray $(VENV) $(BIN)/python -m pip install --quiet '$(RAY)'
	touch $@

# The browser test (test/unit/backends/test_html_report.py) opens the HTML report in
# headless Chromium: Debian's package, installed when missing (as root, or through sudo).
# The install starts in the background with the pip installs above (it is mostly download
# and unpacking) and is waited for here.
$(CHROMIUM_STAMP): | $(BIN)/python
	@sh dev/background.sh wait chromium $(VENV) sh dev/install_chromium.sh
	touch $@

# Ray, for the executor test (test/unit/test_executor.py): about 50 s of download and
# unpacking, 6 CPU-s, so it installs in the background while lint runs (lint never imports
# it; mypy skips it, see pyproject.toml) and pytest waits for it here.
$(RAY_STAMP): | $(ALL_STAMP)
	@sh dev/background.sh wait ray $(VENV) $(BIN)/python -m pip install --quiet '$(RAY)'
	touch $@

install: $(STAMP)

install-all: $(ALL_STAMP) $(RAY_STAMP)

## The main job: the seed model through the standard pipeline, then as written, on one
## stream and with auto side by side, with the reasons and the recommended annotation.
run: $(STAMP)
	$(BIN)/npuir-run examples/seed_multistream.mlir --check
	$(BIN)/npuir-advise examples/seed_multistream.mlir

## Every test: lint, types, the import contracts, pytest, lit, the guide's example pass.
test: lint unit lit example-pass

## The fast tier, for the edit loop: pytest without the slow tier on two workers, then lit.
## (Two workers collect the suite twice: about 12 CPU-s more than one process, 10 s less wall.)
check: unit-fast lit

# mypy checks the torch routes against torch's own types, so lint needs the full install.
lint: $(ALL_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python dev/lint_imports.py

# -rs lists every skip with its reason: none may be a missing package.  pytest-randomly
# shuffles the order and prints its seed (`--randomly-seed=N` repeats an order).
# worksteal: an idle worker takes tests queued for the other, so a minute-long test drawn
# late does not leave one core idle while the other finishes its share.
unit: $(ALL_STAMP) $(CHROMIUM_STAMP) $(RAY_STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal -rs

unit-fast: $(ALL_STAMP) $(CHROMIUM_STAMP) $(RAY_STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal -rs -m 'not slow'

lit: $(ALL_STAMP)
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
