# crossover: set-up, the main job, the tests.
#   make demo   set up, then this machine's first contact (~6 min on 2 cores): a quick calibration of
#               this CPU, the quick suite and the noise floor into results/local, a fit, this CPU against
#               the shipped H200 (the toy's crossover and the MNIST MLP), every figure from the shipped data
#   make test   set up, then the test suite
#   make figures    every figure from the shipped results into figures/ (~50 s, no GPU)
#   make paper      figures, then paper/generated/numbers.tex, then paper/paper.pdf (needs latexmk)
#   make notebook   run experiments/explore.ipynb top to bottom (into build/, the original untouched)
# torch is installed first, as TORCH_SPEC says (default torch==2.13.0). Which build that is depends on
# where pip looks: PyPI's Linux torch is the CUDA build (a multi-GB download of nvidia-* wheels); the
# CPU build comes only from a local wheel (this machine's pip finds torch 2.13.0+cpu on its disk) or
# the CPU index: make TORCH_SPEC='torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu'.
# On a CUDA machine: make TORCH_SPEC='torch', or keep the torch you have: make TORCH_SPEC= (the venv is
# then created with --system-site-packages, so it sees the system's torch; after make clean).
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
OUT ?= results/local
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: setup demo test quick clean figures paper paper-numbers latex-check notebook

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py Makefile
	$(PYTHON) -m venv $(if $(TORCH_SPEC),,--system-site-packages) $(VENV)
	@if [ -n "$(TORCH_SPEC)" ]; then $(BIN)/pip install --quiet $(TORCH_SPEC); fi
	$(BIN)/pip install --quiet -e '.[dev,diagram]'
	touch $@

# The first contact on a new machine: this CPU calibrated (quick, skipped when there), its quick suite
# and its noise floor measured beside it, a fit with the calibrated candidate, then both questions
# answered against the shipped H200 machine (the toy's crossover; the MNIST MLP on this CPU's profile
# against the H200's GPU profile), and every figure from the shipped data. About 6 minutes on 2 cores.
GPU_RESULTS ?= experiments/results/nvidia-h200-16c/gpu-paired
GPU_PROFILE ?= experiments/profiles/nvidia-h200-16c/cuda
demo: setup
	$(BIN)/crossover env
	test -f $(OUT)/calibration/profile.json || $(BIN)/crossover calibrate --device cpu --quick --out $(OUT)/calibration
	$(BIN)/crossover sweep experiments/suites/quick.toml --out $(OUT) --resume
	test -f $(OUT)/noise.json || $(BIN)/crossover noise --windows 2 --span-s 10 --out $(OUT)
	$(BIN)/crossover fit --results $(OUT) --n-boot 50
	$(BIN)/crossover predict --results $(OUT) $(GPU_RESULTS) --d-model 128 --n-layers 128 --batch-size 64 --n-boot 50
	$(BIN)/crossover predict --model experiments/zoo/mnist_mlp.py:model --input-shape 1,28,28 --batch-size 1,64,512 \
		--profiles $(OUT)/calibration $(GPU_PROFILE)
	$(BIN)/crossover figures --results experiments/results --out $(OUT)/figures

quick: setup
	$(BIN)/crossover sweep experiments/suites/quick.toml --out $(OUT) --resume

# The tests in parallel over the cores (pytest-xdist), then those that time anything alone (-m serial).
test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not serial"
	$(BIN)/python -m pytest -q -m serial

clean:
	rm -rf $(VENV) .pytest_cache build paper/generated  # results/ holds measurements: remove it by hand
	cd paper && rm -f paper.aux paper.log paper.out paper.fls paper.fdb_latexmk paper.pdf

figures: setup
	$(BIN)/crossover figures --results experiments/results --out figures

# The paper: every figure, every number (macros computed from the results), then the PDF.
LATEX_PACKAGES := latexmk texlive-latex-base texlive-latex-recommended texlive-fonts-recommended

latex-check:
	@command -v latexmk >/dev/null 2>&1 || { echo "make paper needs LaTeX: apt-get install $(LATEX_PACKAGES)"; exit 1; }

paper-numbers: setup
	$(BIN)/python -m crossover.paper.numbers --results experiments/results --out paper/generated/numbers.tex

paper: latex-check figures paper-numbers
	cd paper && latexmk -pdf -interaction=nonstopmode -halt-on-error -quiet paper.tex
	@echo "wrote paper/paper.pdf"

# The exploratory notebook, executed top to bottom in a copy (build/explore.ipynb): fails on any error.
notebook: setup
	@mkdir -p build
	$(BIN)/python -c "import nbformat, nbclient; nb = nbformat.read('experiments/explore.ipynb', as_version=4); \
		nbclient.NotebookClient(nb, timeout=300, kernel_name='python3', resources={'metadata': {'path': 'experiments'}}).execute(); \
		nbformat.write(nb, 'build/explore.ipynb'); print('ran experiments/explore.ipynb -> build/explore.ipynb')"
