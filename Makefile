# Two entry points: `make demo` (set up, then run the demo) and `make test` (set up, then the suite).
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint services model-check

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/blackwidow demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

services:
	tests/services/install

# two workers (pytest-xdist): most tests wait on real processes and servers, not on a core;
# --dist loadfile keeps each file on one worker: the cluster tier's simulated hosts (one file) never on two
test: lint services
	tests/run-suite $(BIN)/pytest -n 2 --dist loadfile

# the model-based test of the monitor over many more histories than the suite's 30
model-check: $(STAMP)
	BLACKWIDOW_MODEL_HISTORIES=$${BLACKWIDOW_MODEL_HISTORIES:-500} \
		$(BIN)/pytest tests/component/test_monitor_model.py -q -p no:logging
