# The README's two commands: `make bench` (the main job) and `make test`; `make docs`
# serves the manual (mkdocs.yml) at http://127.0.0.1:8000.
# Both create the virtual environment on first use and reinstall when the
# package metadata changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
ARGS ?=

.PHONY: bench test docs install clean clean-kernels

$(BIN)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all]"
	touch $@

install: $(BIN)/.installed

bench: $(BIN)/.installed
	$(BIN)/fedbandit bench --overwrite $(ARGS)

test: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/pytest $(ARGS)

docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# Numba's disk cache is keyed by the source file of each compiled function, not by
# the files it calls into: after editing a kernel module, drop the compiled kernels.
clean-kernels:
	find fedbandit_env baselines -name '*.nbi' -delete -o -name '*.nbc' -delete

clean: clean-kernels
	rm -rf $(VENV) results site .pytest_cache .mypy_cache .ruff_cache *.egg-info
