# Two entry points for a fresh machine: `make demo` and `make test`.
# Each bootstraps .venv with pinned dependencies (requirements.lock) on first use.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
TORCH   := torch==2.13.0   # the local CPU wheel; a plain `torch` pulls a multi-GB CUDA build
# setuptools' "Editable installation" banner (a BuildBackendWarning about the package-dir mapping) said nothing to act on
QUIET   := PYTHONWARNINGS="ignore:Editable installation"
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast check bench docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# core only: enough for the demo (no torch, starts in well under a second)
# engine/__init__.py holds the version the installed metadata must carry
$(VENV)/.core: pyproject.toml requirements.lock engine/__init__.py | $(BIN)/python
	$(QUIET) $(BIN)/pip install -q -c requirements.lock -e .
	touch $@

# everything the test-suite exercises: embeddings (CPU torch first), LLM SDK, text, dev tools, the docs site
$(VENV)/.dev: pyproject.toml requirements.lock $(VENV)/.core
	$(BIN)/pip install -q $(TORCH)
	$(QUIET) $(BIN)/pip install -q -c requirements.lock -e '.[embeddings,llm,text,dev,docs,train]'  # train: ~80 s (docs/serve.md)
	touch $@

demo: $(VENV)/.core
	$(BIN)/kgfed demo

# -rs: each skipped test is listed with its reason (a server binary or an extra that is missing here)
test: $(VENV)/.dev
	$(BIN)/python -m pytest -q -rs $(PYTEST_ARGS)

# the suite without the slow parts: Virtuoso servers, the embedding model, the README examples
test-fast: $(VENV)/.dev
	$(BIN)/python -m pytest -q -rs -m "not slow and not virtuoso and not embeddings" $(PYTEST_ARGS)

# lint and types (scripts/check.py, docs/development.md): ruff 0 findings; mypy 0 errors in sparql/cache/endpoints,
# engine/ at most its baseline (scripts/mypy-engine-baseline)
check: $(VENV)/.dev
	$(BIN)/python scripts/check.py $(CHECK_ARGS)

bench: $(VENV)/.dev
	$(BIN)/python -m bench.tog_pattern

# the docs site into site/ (strict: a broken link or a docstring that does not render fails)
docs: $(VENV)/.dev
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info site
