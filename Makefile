# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make book   -> .venv, pinned requirements, the library, every chapter executed, HTML in _build/html
#   make test   -> the same set-up, then the whole test suite (chapters at smoke scale)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2

.PHONY: book test bench clean venv

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# jupyter-cache keys a chapter on its own cells only, so a change in lib/ or data/ would leave
# stale results in the book: when their hash changes, drop the cache and re-read every page.
SRC_HASH = $(shell find lib data -type f \( -name '*.py' -o -name '*.csv' \) | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)

book: $(STAMP)
	@if [ "$$(cat _build/.src-hash 2>/dev/null)" != "$(SRC_HASH)" ]; then \
	    echo "lib/ or data/ changed since the last build: re-executing every chapter"; \
	    rm -rf _build/.jupyter_cache; ALL=--all; fi; \
	$(BIN)/jupyter-book build -W -n --keep-going $$ALL .
	@echo $(SRC_HASH) > _build/.src-hash

test: $(STAMP)
	INFSCHED_SCALE=smoke $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval-lax tests book

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build
