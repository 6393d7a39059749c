# Every target builds .venv itself when it is missing, so a fresh clone needs only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The solver compiled with mypyc (domain/rummy13/native.py says when it runs). A build that
# fails still writes this record (the pure Python solver then runs), so setup goes on.
NATIVE := domain/rummy13/native_build.json
SOLVER_SOURCES := domain/rummy13/solver.py domain/rummy13/suit_tables.py

.PHONY: run test bench lint format setup clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(NATIVE): $(STAMP) $(SOLVER_SOURCES)
	RUMMY_LEDGER_PURE=1 $(BIN)/python -m domain.rummy13.compile_solver

setup: $(STAMP) $(NATIVE)

run: $(STAMP) $(NATIVE)
	$(BIN)/rummy-ledger demo

# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): the
# suite starts many Python processes (xdist workers, CLI runs, servers), and each one would
# otherwise compile the project from source again, about a third of a short one's CPU.
test: $(STAMP) $(NATIVE)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m compileall -q -j 2 domain replays web bench
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 2 -q

bench: $(STAMP) $(NATIVE)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/rummy-ledger schema --check

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .ruff_cache .hypothesis build $(NATIVE) domain/rummy13/*.so
