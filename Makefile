# crossover: set-up, the main job, the tests.
#   make demo   set up, then: environment, one measurement, the quick suite on this machine (~1 min),
#               a fit of it, and a prediction from the shipped reference data
#   make test   set up, then the test suite
# On a CPU-only machine the CPU build of torch is installed first, so nothing pulls a multi-GB CUDA
# build (this machine's pip finds torch 2.13.0+cpu on its disk; elsewhere add the CPU index:
# make TORCH_SPEC='torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu').
# On a CUDA machine: make TORCH_SPEC='torch' (or keep the torch you have: make TORCH_SPEC=).
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
OUT ?= results/local

.PHONY: setup demo test quick clean figures

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	@if [ -n "$(TORCH_SPEC)" ]; then $(BIN)/pip install --quiet $(TORCH_SPEC); fi
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: setup
	$(BIN)/crossover env
	$(BIN)/crossover measure --d-model 128 --n-layers 128 --batch-size 1 --device cpu
	$(BIN)/crossover sweep experiments/suites/quick.toml --out $(OUT) --resume
	$(BIN)/crossover fit --results $(OUT) --n-boot 50
	$(BIN)/crossover predict --d-model 320 --n-layers 24 --batch-size 12 --n-boot 50

quick: setup
	$(BIN)/crossover sweep experiments/suites/quick.toml --out $(OUT) --resume

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache  # results/ holds measurements: remove it by hand

figures: setup
	$(BIN)/crossover figures --results experiments/results --out figures
