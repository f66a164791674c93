PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test test-oldest test-newest lint docs demo bench bench-latency bench-scale eval eval-outside eval-llm-floor e2e fuzz mutate clean

# The package alone (what `make demo` needs: typer, orjson, tiktoken, openai, tqdm), then the extras the tests use.
$(BIN)/compactctl: pyproject.toml compactctl/_version.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	@touch $@

$(VENV)/.extras: $(BIN)/compactctl
	$(BIN)/pip install -q -e '.[test,mcp,ray,hf]'  # mcp, ray, hf: tests/test_mcp.py and tests/test_ray.py run in CI
	@touch $@

install: $(VENV)/.extras

# The suite in TEST_WORKERS processes (pytest-xdist; `auto`: one per CPU); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= auto
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# The oldest Python pyproject.toml allows (3.10), in a venv of its own, without the optional extras (their tests
# skip). Not in CI, which runs python3: make test-oldest PY_OLDEST=/path/to/python3.10
PY_OLDEST ?= python3.10
test-oldest:
	$(PY_OLDEST) -m venv .venv-oldest
	.venv-oldest/bin/pip install -q -e '.[test]'
	.venv-oldest/bin/python -m pytest -n $(TEST_WORKERS)

# The newest Python we test (3.13: its dataclasses compare fields one by one, which compactctl.lean follows), the same way.
PY_NEWEST ?= python3.13
test-newest:
	$(PY_NEWEST) -m venv .venv-newest
	.venv-newest/bin/pip install -q -e '.[test]'
	.venv-newest/bin/python -m pytest -n $(TEST_WORKERS)

# All three run, and lint fails if any of them does; CI (.ci/run) runs it before the tests.
lint: install
	@status=0; \
	$(BIN)/ruff check compactctl tests bench docs || status=1; \
	$(BIN)/ruff format --check compactctl tests bench docs || status=1; \
	$(BIN)/mypy || status=1; \
	exit $$status

docs: install
	$(BIN)/python docs/gen_cli.py

demo: $(BIN)/compactctl
	$(BIN)/compactctl compact sample_transcripts/long_session.jsonl --context-window 8000 -o /tmp/compactctl-demo.jsonl --archive /tmp/compactctl-demo-archive.jsonl
	$(BIN)/compactctl repair --check /tmp/compactctl-demo.jsonl
	@echo "compacted transcript: /tmp/compactctl-demo.jsonl (archive of what was removed: /tmp/compactctl-demo-archive.jsonl)"

bench: install
	$(BIN)/python bench/run.py
	$(BIN)/python bench/latency.py

bench-latency: install
	$(BIN)/python bench/latency.py

bench-scale: install
	$(BIN)/python bench/scale.py

fuzz: install
	$(BIN)/python -m tests.fuzz 10000

# Mutation testing of repair, pairs, plan and assemble against their fast tests (bench/mutation.py; opt-in, not in CI:
# all 880-odd mutants take hours on two shared cores, --sample 50 about 40 minutes; results in bench/results/mutation/).
# MUTATE_ARGS: e.g. --jobs 2 --sample 50, or --module pairs
mutate: install
	$(BIN)/python bench/mutation.py $(MUTATE_ARGS)

eval: install
	$(BIN)/python bench/eval_corpus.py

# A second instrument that shares no code with the one above: compactctl as a black box (its CLI), facts and
# baselines of its own (bench/outside_eval.py; results in bench/results/outside_eval.{md,json}).
eval-outside: install
	$(BIN)/python bench/outside_eval.py

eval-llm-floor: install
	$(BIN)/python bench/llm_floor.py

e2e: install
	bash bench/e2e.sh

clean:
	rm -rf $(VENV) .venv-oldest bench/data bench/results .pytest_cache .hypothesis
