# Two commands on a fresh machine with only python3: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench lint corpora clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# the distribution was named leakcheck before pytest-leakcheck: two would load the plugin twice
	@$(BIN)/python -m pip uninstall --quiet --yes leakcheck 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/python scripts/demo.py && $(BIN)/python -m examples.mcp_targets

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# the real exception texts of every HTTP and SSH client at every stage, on this machine
corpora: $(STAMP)
	$(BIN)/python scripts/record_http_exceptions.py
	$(BIN)/python scripts/record_ssh_exceptions.py

lint: $(STAMP)
	$(BIN)/ruff check leakcheck plugins recorders tests bench scripts examples
	$(BIN)/ruff format --check leakcheck plugins recorders tests bench scripts examples
	$(BIN)/mypy leakcheck plugins recorders

clean:
	rm -rf $(VENV) build dist *.egg-info
