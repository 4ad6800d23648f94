# The README's two commands: `make bench` (the main job) and `make test`; `make docs`
# serves the manual (mkdocs.yml) at http://127.0.0.1:8000.
# Both create the virtual environment on first use and reinstall when the
# package metadata changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
ARGS ?=

.PHONY: bench test docs docs-numbers learned-numbers privacy-numbers references-numbers mutations install clean clean-kernels

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

# The default bench's table in README.md, docs/index.md and the benchmarks guide is
# generated: run the bench, then write its table into the pages' generated blocks.
DEFAULT_BENCH_PAGES := README.md docs/index.md docs/guides/benchmarks.md
docs-numbers: $(BIN)/.installed
	$(BIN)/fedbandit bench --overwrite --no-progress --out results/bench
	$(BIN)/fedbandit table results/bench --block default-bench \
		$(foreach page,$(DEFAULT_BENCH_PAGES),--into $(page))
	$(BIN)/python examples/robustness.py --replot --out docs/figures --into docs/guides/wrappers.md
	$(BIN)/python examples/linear_speed.py --into docs/guides/linear.md
	$(BIN)/python examples/learner_among_gossip.py --replot \
		--from docs/figures/learner_among_gossip.json --into docs/guides/learned.md

# The shipped learned references beside the strongest references of their settings, on
# held-out instances: the generated blocks of docs/guides/learned.md.
LEARNED := results/learned
LEARNED_BENCH := $(BIN)/fedbandit bench --overwrite --no-progress --no-plot --held-out
learned-numbers: $(BIN)/.installed
	$(LEARNED_BENCH) --setting neighbours --horizon 200 --trials 1000 --out $(LEARNED)/neighbours \
		--policies learned_neighbours,tuned_ts,coop_ts,coop_ts_relay,gossip_ucb
	$(LEARNED_BENCH) --setting gossip --horizon 200 --trials 1000 --out $(LEARNED)/gossip \
		--policies learned_gossip,tuned_ts,coop_ts_relay,coop_ts,gossip_ucb
	$(LEARNED_BENCH) --setting gossip+private --horizon 200 --trials 1000 --out $(LEARNED)/private \
		--policies learned_private,tuned_private_ts,gossip_ucb,private_coop_ts
	$(LEARNED_BENCH) --setting neighbours --horizon 20000 --trials 20 --record-every 1000 \
		--out $(LEARNED)/neighbours-long --policies learned_neighbours,tuned_ts,coop_ts,gossip_ucb
	$(BIN)/fedbandit table $(LEARNED)/neighbours --markdown --against learned_neighbours \
		--block learned-neighbours --into docs/guides/learned.md
	$(BIN)/fedbandit table $(LEARNED)/gossip --markdown --against learned_gossip \
		--block learned-gossip --into docs/guides/learned.md
	$(BIN)/fedbandit table $(LEARNED)/private --markdown --against learned_private \
		--block learned-private --into docs/guides/learned.md
	$(BIN)/fedbandit table $(LEARNED)/neighbours-long --markdown --against learned_neighbours \
		--block learned-neighbours-long --into docs/guides/learned.md

# Every privacy audit's bound, as its test measured it (the slow ones included): the
# generated block of docs/privacy.md (fedbandit_env.privacy.audit_log).
AUDIT_TESTS := tests/privacy/test_privacy_observers.py tests/privacy/test_privacy_audits.py \
	tests/families/linear/test_linear_privacy.py tests/families/index/test_epoch_private.py \
	tests/vector/test_vector_audit.py
privacy-numbers: $(BIN)/.installed
	mkdir -p results && rm -f results/audits.jsonl
	FEDBANDIT_AUDIT_LOG=results/audits.jsonl $(BIN)/pytest -q -p no:cacheprovider $(AUDIT_TESTS)
	$(BIN)/python -m fedbandit_env.privacy.audit_log results/audits.jsonl --into docs/privacy.md

# Every table of docs/references.md: each section's benches (examples/references_numbers.py
# lists them) into results/references, then its generated block (about half an hour).
references-numbers: $(BIN)/.installed
	$(BIN)/python examples/references_numbers.py --into docs/references.md

# Each known weakening of the privacy code (tests/privacy/mutations.py) applied to the
# package, the quick privacy suite run under it: prints the test that catches each.
# One weakening on any selection: FEDBANDIT_MUTATION=<name> PYTHONPATH=tests/privacy
# .venv/bin/pytest -p mutations -m 'not slow' <tests>
mutations: $(BIN)/.installed
	$(BIN)/pytest -q -p no:cacheprovider -m slow -s tests/privacy/test_mutations.py

# Numba's disk cache is keyed by the source file of each compiled function, not by
# the files it calls into; the fast path drops caches compiled against other kernels
# by itself (runner.fast.stale_caches). This drops every compiled kernel by hand.
clean-kernels:
	find fedbandit_env baselines -name '*.nbi' -delete -o -name '*.nbc' -delete \
		-o -name 'fedbandit-kernels.stamp' -delete

clean: clean-kernels
	rm -rf $(VENV) results site .pytest_cache .mypy_cache .ruff_cache *.egg-info
