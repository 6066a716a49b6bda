# Developer entry points: the virtual environment, the demo, the tests, the fuzzer and the benchmark.
#
# bytegraph runs on CPython 3.11, 3.12 and 3.13: `make test PYTHON=python3.12` picks one. The
# interpreter is PYTHON if it runs, else pyenv's newest matching version (`$(pyenv root)/versions/
# 3.12.*`: pyenv's shims answer only for the versions made global). The 3.11 environment is
# `.venv` in the clone; another version's is kept outside it, in ~/.cache/bytegraph/venv-3.X
# (VENV= to change), so a second clone or run reuses its torch. The stamp file records a finished
# install and is redone when pyproject.toml changes. torch is pinned and installed first, so no
# later step can pull another torch version.

PYTHON ?= python3.11
SUPPORTED_PYTHONS := 3.11 3.12 3.13
PYTHON_BIN := $(shell for p in $(PYTHON) $$(ls -d $$(pyenv root 2>/dev/null)/versions/$(patsubst python%,%,$(notdir \
  $(PYTHON))).*/bin/python 2>/dev/null | sort -V -r); do "$$p" -c '' 2>/dev/null && { command -v "$$p"; break; }; done)
PY_VERSION := $(shell "$(PYTHON_BIN)" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
VENV ?= $(if $(filter 3.11,$(PY_VERSION)),.venv,$(HOME)/.cache/bytegraph/venv-$(PY_VERSION))
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bytegraph-installed
TORCH := torch==2.13.0
PYTEST_ARGS ?=
# a shared environment's editable install may point at another clone: this clone comes first
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: $(VENV) demo test fuzz bench bench-dist sweep

$(VENV): $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(filter $(PY_VERSION),$(SUPPORTED_PYTHONS))" || { \
	  echo "error: bytegraph needs CPython 3.11, 3.12 or 3.13, and '$(PYTHON)' is missing or$(if \
	  $(PY_VERSION), Python $(PY_VERSION), another version)." >&2; \
	  echo "       Install one, or run: make PYTHON=/path/to/python3.X (or PYTHON=python3.12 with pyenv)" >&2; \
	  exit 1; }
	test -x $(PY) || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install '$(TORCH)'
	$(PY) -m pip install -e '.[dev]' '$(TORCH)'
	touch $@

demo: $(STAMP)
	$(PY) -m bench.demo

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q $(PYTEST_ARGS)

# Differential fuzzing with graph breaks (tests/fuzzing): N programs from seed SEED, full
# profile, 2 processes; failures are shrunk into tests/fuzzing/failures/<seed>.py. About 3
# programs per CPU-second, so 20,000 take ~55 min on 2 idle cores, plus the shrinking (~25 s a
# failure; FUZZ_ARGS=--no-shrink to only count them).
N ?= 20000
SEED ?= 0
FUZZ_ARGS ?=

fuzz: $(STAMP)
	$(PY) -m tests.fuzzing -n $(N) --seed $(SEED) -j 2 $(FUZZ_ARGS)

# One intra-op thread for both systems: on a shared 2-core machine torch's second thread
# stalls eager runs by ~150 ms at random (docs/performance.md). BENCH_THREADS=2 to change.
BENCH_THREADS ?= 1

# The compiled-autograd training step runs in its own processes (the autograd engine binds
# its node functions to the first compiled-autograd compiler of a process); so do the warm
# starts (two fresh processes per model and system sharing a capture cache directory). The
# depth of a tiny Llama, with repeated blocks replayed or not, closes the run.
bench: $(STAMP)
	OMP_NUM_THREADS=$(BENCH_THREADS) $(PY) -m bench.run
	OMP_NUM_THREADS=$(BENCH_THREADS) $(PY) -m bench.compiled_autograd_workloads
	OMP_NUM_THREADS=$(BENCH_THREADS) $(PY) -m bench.warm_start --repeat 3
	OMP_NUM_THREADS=$(BENCH_THREADS) $(PY) -m bench.repeated_blocks

# A DistributedDataParallel training step on 2 gloo ranks (bench/ddp_step.py): eager DDP, bytegraph
# split at DDP's buckets and unsplit, torch.compile split and unsplit, aot_eager and inductor; an
# 8-layer MLP, then a 4-block transformer.
bench-dist: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m bench.ddp_step --backends aot_eager,inductor --steps 40
	OMP_NUM_THREADS=1 $(PY) -m bench.ddp_step --backends aot_eager,inductor --steps 40 --model transformer \
		--layers 4 --width 256 --bucket-cap-mb 1
	OMP_NUM_THREADS=1 $(PY) -m bench.ddp_step --backends aot_eager,inductor --steps 30 --separate 6 \
		--ways "bytegraph split,torch.compile split"
	OMP_NUM_THREADS=1 $(PY) -m bench.ddp_step --backends aot_eager,inductor --steps 30 --separate 6 \
		--ways "bytegraph split,torch.compile split" --model transformer --layers 4 --width 256 --bucket-cap-mb 1

# Every architecture transformers can build from its config classes, shrunk to tiny sizes, and
# every torch.nn module, under bytegraph and torch.compile side by side (bench/sweep.py); the
# table goes to docs/sweep.md, a section per transformers version. One worker process, 120 s per
# entry; SWEEP_ARGS for more (e.g. SWEEP_ARGS='--limit 10 --jobs 2').
SWEEP_ARGS ?=

sweep: $(STAMP)
	OMP_NUM_THREADS=$(BENCH_THREADS) $(PY) -m bench.sweep $(SWEEP_ARGS)
