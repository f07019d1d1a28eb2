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

book: $(STAMP)
	$(BIN)/jupyter-book build -W -n --keep-going .

test: $(STAMP)
	INFSCHED_SCALE=smoke $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval-lax tests book

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build
