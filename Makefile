# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make book   -> .venv, pinned requirements, the library, every chapter executed, HTML in _build/html
#   make test   -> the same set-up, then ruff and the whole test suite (chapters at smoke scale)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2

.PHONY: book book-default _render test bench clean venv browser

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# jupyter-cache keys a chapter on its own cells only, so a change in lib/ or data/ (the results
# store included) would leave stale results in the book: when their hash, or the scale the book is
# built at, changes, drop the cache and re-read every page.
SRC_HASH = $(shell find lib data -type f \( -name '*.py' -o -name '*.csv' -o -name '*.json' -o -name '*.jsonl' \) | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)

# `make book`: each chapter at the paper's setting where data/results/ holds a current build of it
# (strictly: a point missing from the store fails the build instead of computing for hours), the
# others at `default`; each page says which. `make book-default`: every chapter live at `default`.
book: $(STAMP)
	@$(MAKE) --no-print-directory _render MODE=store ENVS="INFSCHED_STORE_STRICT=1"

book-default: $(STAMP)
	@$(MAKE) --no-print-directory _render MODE=default ENVS="INFSCHED_SCALE=default INFSCHED_STORE=off"

_render:
	@if [ "$$(cat _build/.src-hash 2>/dev/null)" != "$(SRC_HASH)-$(MODE)" ]; then \
	    echo "lib/ or data/ changed, or the scale, since the last build: re-executing every chapter"; \
	    rm -rf _build/.jupyter_cache; ALL=--all; fi; \
	env $(ENVS) $(BIN)/jupyter-book build -W -n --keep-going $$ALL .
	@echo $(SRC_HASH)-$(MODE) > _build/.src-hash

# the test suite opens the smoke build in headless Chromium (tests/browser.py): Debian's package,
# installed here when missing (as root, or through sudo without a password)
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the browser check"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo "sudo -n" ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; }

# the linter first (seconds; its rules are in pyproject.toml), then the suite
test: $(STAMP) browser
	$(BIN)/ruff check lib tests benchmarks conftest.py
	INFSCHED_SCALE=smoke $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --durations=25 --nbval-lax tests book

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build
