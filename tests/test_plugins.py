"""The worked plugin example (tests/plugins): a signal and a target kind from another package,
found through entry points alone, held to the conformance kits, and used by the CLI end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, WIKIMIA, read_jsonl

PLUGIN = ROOT / "tests" / "plugins"


def run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter that sees the plugin as if installed (its dist-info on the path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_a_plugin_signal_and_target_kind_are_discovered_conform_and_score_from_the_cli(tmp_path):
    docs = [d for d in read_jsonl(WIKIMIA / "length64.jsonl")][:120]
    members = [d for d in docs if d["label"] == 1]
    (tmp_path / "counts.txt").write_text("\n".join(d["text"] for d in members))  # the "training data" of the unigram model
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": d["text"], "label": d["label"]}) + "\n" for d in docs))
    code = """
import json, sys
from typer.testing import CliRunner
from verifier.cli import app
from verifier.conformance import check_discovery, check_loaded_target, check_signal, check_target
from verifier.signals import REGISTRY
from verifier.targets import KINDS, kind_of, load_target

check_signal(REGISTRY["median_logprob"])
check_target(KINDS["unigram"])
check_loaded_target(load_target("unigram:counts.txt"), ["a first text", "and a second one"])
check_discovery()
assert kind_of("unigram:counts.txt").name == "unigram" and kind_of("smollm2-135m").name == "causal_lm"
runner = CliRunner()
scored = runner.invoke(app, ["score", "--model", "unigram:counts.txt", "--data", "docs.jsonl", "--signal", "loss",
                             "--signal", "median_logprob", "--signal", "min_k", "--out", "s.parquet", "--cache-dir", "cache"])
assert scored.exit_code == 0, scored.output
evaluated = runner.invoke(app, ["evaluate", "s.parquet", "--json"])
assert evaluated.exit_code == 0, evaluated.output
from verifier.audit import run_audit
plugins = run_audit("example:corpus-pg19").findings["environment"]["plugins"]  # a verdict names the plugin code it could use
assert plugins == {"signals": {"median_logprob": "verifier_example_plugin.median_logprob (verifier-example-plugin 0.1)"},
                   "targets": {"unigram": "verifier_example_plugin.unigram (verifier-example-plugin 0.1)"}}, plugins
print(json.dumps({r["name"]: r.get("auc") for r in json.loads(evaluated.stdout)}))
"""
    result = run(code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    auc = json.loads(result.stdout.strip().splitlines()[-1])
    # The unigram model was counted from the member texts: its log p separates them, by both signals.
    assert auc["loss"] > 0.9 and auc["median_logprob"] > 0.8, auc


def test_a_plugin_that_fails_to_load_is_one_line_naming_it(tmp_path):
    broken = tmp_path / "broken_plugin"
    (broken / "broken-0.1.dist-info").mkdir(parents=True)
    (broken / "broken-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (broken / "broken-0.1.dist-info" / "entry_points.txt").write_text("[verifier.signals]\nbad = broken_signal\n")
    (broken / "broken_signal.py").write_text("raise RuntimeError('oops')\n")
    env = {**os.environ, "PYTHONPATH": str(broken)}
    result = subprocess.run([sys.executable, "-m", "verifier.cli", "audit", "example:corpus-pg19", "--no-sign", "--out", "out"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "plugin 'bad' (verifier.signals entry point broken_signal) failed to load: RuntimeError: oops" in result.stderr
