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
    (tmp_path / "counts.txt").write_text(
        "\n".join(d["text"] for d in members)
    )  # the "training data" of the unigram model
    (tmp_path / "docs.jsonl").write_text(
        "".join(json.dumps({"text": d["text"], "label": d["label"]}) + "\n" for d in docs)
    )
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
                             "--signal", "median_logprob", "--signal", "min_k", "--out", "s.parquet",
                             "--cache-dir", "cache"])
assert scored.exit_code == 0, scored.output
evaluated = runner.invoke(app, ["evaluate", "s.parquet", "--json"])
assert evaluated.exit_code == 0, evaluated.output
from verifier.audit import run_audit
from verifier.report import render_html
findings = run_audit("example:corpus-pg19").findings
plugins = findings["environment"]["plugins"]  # a verdict names the plugin code it could use, part by part
assert set(plugins) == {"signals", "targets"} and set(plugins["signals"]) == {"median_logprob"}
assert set(plugins["targets"]) == {"unigram"}
signal = plugins["signals"]["median_logprob"]
assert (signal["distribution"], signal["version"], signal["module"]) == (
    "verifier-example-plugin", "0.1", "verifier_example_plugin.median_logprob")
assert len(signal["module_sha256"]) == 64 and "verifier.signals:median_logprob" in signal["entry_point"]
assert signal["module_sha256"] in render_html(findings, "0" * 64)  # and the report shows it
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
    result = subprocess.run(
        [sys.executable, "-m", "verifier.cli", "audit", "example:corpus-pg19", "--no-sign", "--out", "out"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert (
        "plugin 'bad' (verifier.signals entry point broken_signal) failed to load: RuntimeError: oops" in result.stderr
    )


def fake_plugin(root: Path, entry_points: str, modules: dict[str, str]) -> Path:
    """A plugin as pip would leave it: a dist-info folder declaring ``entry_points`` and its modules."""
    (root / "hostile-0.1.dist-info").mkdir(parents=True)
    (root / "hostile-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile\nVersion: 0.1\n")
    (root / "hostile-0.1.dist-info" / "entry_points.txt").write_text(entry_points)
    for name, code in modules.items():
        (root / f"{name}.py").write_text(code)
    return root


def run_with(plugin: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(plugin)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


KIND = """
from verifier.targets.registry import register
@register(prefix={prefix!r})
class Grabber:
    kind = "grabber"; capabilities = frozenset({{"answers"}}); limitations = ("x",); remote = True
    @classmethod
    def load(cls, *a): raise SystemExit("grabbed")
    @classmethod
    def check_spec(cls, spec): pass
    @classmethod
    def unloaded_identity(cls, spec, base): return {{}}
"""


def test_a_plugin_cannot_take_the_specs_of_the_built_in_kinds(tmp_path):
    """A prefix that is no scheme ('' or 'smollm2') would take local models' specs: refused in one line."""
    for i, prefix in enumerate(("", "smollm2", "openai-", "openai-compatible:https:")):
        plugin = fake_plugin(
            tmp_path / f"p{i}", "[verifier.targets]\ngrab = grab\n", {"grab": KIND.format(prefix=prefix)}
        )
        result = run_with(plugin, "from verifier.targets import kind_of; print(kind_of('smollm2-135m').name)", tmp_path)
        assert (
            result.returncode != 0
            and "plugin 'grab' (verifier.targets entry point grab) failed to load: ValueError" in result.stderr
        ), result
        assert result.stderr.strip().splitlines()[-1].startswith("verifier.errors.VerifierError: plugin 'grab'")


def test_every_part_a_plugin_adds_is_credited_to_it_whatever_its_group_or_the_read_order(tmp_path):
    route = """
from verifier.claims import ClaimKind
from verifier.routes.base import NoParams, Route, register
from verifier.verdicts import Verdict
@register
class Sneaky(Route):
    name = "sneaky"; Params = NoParams; requires = frozenset({"suspect"})
    claim_kinds = frozenset({ClaimKind.TRAINED_ON})
    verdicts = {"always": {ClaimKind.TRAINED_ON: Verdict.SUPPORTED}}
    def run(self, ctx, params): raise NotImplementedError
"""
    plugin = fake_plugin(
        tmp_path / "x",
        "[verifier.signals]\nxg = xg\n\n[verifier.targets]\nnothing = nothing\n",
        {"xg": route, "nothing": "X = 1\n"},
    )
    code = """
from verifier.routes import ROUTES  # the route registry read first: the signals group's plugin still counts
assert "sneaky" in ROUTES and ROUTES.plugins["sneaky"].entry_point == "verifier.signals:xg = xg", ROUTES.plugins
from verifier.conformance import NonConformance, check_discovery
try:
    check_discovery()
except NonConformance as exc:
    assert "plugins that registered nothing: verifier.targets:nothing = nothing" in str(exc), exc
else:
    raise AssertionError("a plugin registering nothing passed")
"""
    result = run_with(plugin, code, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_failing_plugin_leaves_nothing_behind_and_cannot_end_the_program(tmp_path):
    half = (
        "from verifier.signals.base import Signal, register\nfrom dataclasses import dataclass\n"
        "@register\n@dataclass(frozen=True)\nclass Half(Signal):\n    name = 'half'\n    def score(self, doc): return "
        "0.0\n"
        "raise RuntimeError('config missing')\n"
    )
    plugin = fake_plugin(tmp_path / "h", "[verifier.signals]\nhalf = half\n", {"half": half})
    code = """
from verifier.errors import VerifierError
from verifier.signals import REGISTRY
for attempt in range(2):  # the same one-line error both times, not 'registered twice'
    try:
        list(REGISTRY)
    except VerifierError as exc:
        assert "RuntimeError: config missing" in str(exc), exc
assert "half" not in REGISTRY._parts
"""
    assert run_with(plugin, code, tmp_path).returncode == 0
    exiting = fake_plugin(tmp_path / "e", "[verifier.signals]\nbye = bye\n", {"bye": "raise SystemExit(0)\n"})
    result = subprocess.run(
        [sys.executable, "-m", "verifier.cli", "audit", "example:corpus-pg19", "--no-sign", "--out", "out"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(exiting)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        result.returncode == 2
        and "plugin 'bye'" in result.stderr
        and "SystemExit" in result.stderr
        and not (tmp_path / "out").exists()
    )
