# Two commands on a fresh machine with only python3: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench lint corpora upgrade clean

# constraints.txt pins every dependency: a clean clone tests against the versions the corpora
# and snapshots were recorded with (`make upgrade` moves them on)
$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# the distribution was named leakcheck before pytest-leakcheck: two would load the plugin twice
	@$(BIN)/python -m pip uninstall --quiet --yes leakcheck 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/python scripts/demo.py && $(BIN)/python -m examples.mcp_targets

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,bench]'
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# the real exception texts of every HTTP and SSH client at every stage, on this machine
corpora: $(STAMP)
	$(BIN)/python scripts/record_http_exceptions.py
	$(BIN)/python scripts/record_ssh_exceptions.py

# the newest release of every dependency into constraints.txt; then `make corpora`, `make test`
# and `.venv/bin/leakcheck review` show what the upgrade changed in the texts a gateway hands on
UPGRADE_VENV := build/upgrade-venv
upgrade:
	rm -rf $(UPGRADE_VENV)
	$(PYTHON) -m venv $(UPGRADE_VENV)
	$(UPGRADE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(UPGRADE_VENV)/bin/python -m pip install --quiet -e '.[dev]'
	(sed -n '/^#/p' constraints.txt; $(UPGRADE_VENV)/bin/python -m pip freeze --all --exclude-editable \
		| grep -v -i -e '^pip==' -e '^pytest-leakcheck') > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf $(UPGRADE_VENV)
	@echo "constraints.txt moved on: run make corpora, make test, then .venv/bin/leakcheck review"

lint: $(STAMP)
	$(BIN)/ruff check leakcheck plugins recorders tests bench scripts examples
	$(BIN)/ruff format --check leakcheck plugins recorders tests bench scripts examples
	$(BIN)/mypy leakcheck plugins recorders

clean:
	rm -rf $(VENV) build dist *.egg-info
