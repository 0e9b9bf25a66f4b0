# crossover: set-up, the main job, the tests.
#   make demo   set up, then: environment, one measurement, the quick suite on this machine (~1 min),
#               a fit of it, a prediction of this CPU against the shipped H100, every figure from the
#               shipped reference data
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

demo: setup
	$(BIN)/crossover env
	$(BIN)/crossover measure --d-model 128 --n-layers 128 --batch-size 1 --device cpu
	$(BIN)/crossover sweep experiments/suites/quick.toml --out $(OUT) --resume
	$(BIN)/crossover fit --results $(OUT) --n-boot 50
	$(BIN)/crossover predict --results $(OUT) experiments/results/nvidia-h100-80gb-hbm3-16c --d-model 320 --n-layers 24 --batch-size 12 --n-boot 50
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
