"""Robustness defects found by trying the tool: each input mistake ends in one clear error."""

from __future__ import annotations

import json
import math
import stat

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from verifier.baselines.latest_year import latest_year_baseline
from verifier.cli import app
from verifier.data import load_documents
from verifier.errors import VerifierError
from verifier.signals.gray_box.gap_k import GapK
from verifier.signals.gray_box.min_k import MinK
from verifier.signals.gray_box.min_k_plus_plus import MinKPlusPlus
from verifier.stats.metrics import evaluate_scores
from verifier.trust.keys import generate_key

runner = CliRunner()

ROWS = [
    {"text": "An article from 2016.", "year": 2016, "member": 1, "ratio": 0.5, "flag": True},
    {"text": "An article from 2017.", "year": 2017, "member": 0, "ratio": 1.0, "flag": False},
    {"text": "Another one from 2016.", "year": 2016, "member": 0, "ratio": 0.25, "flag": True},
]


@pytest.fixture(params=["jsonl", "csv", "parquet"])
def table(request, tmp_path):
    path = tmp_path / f"d.{request.param}"
    frame = pd.DataFrame(ROWS)
    if request.param == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    elif request.param == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.astype({"year": "float64"}).to_parquet(path)  # a float column, as pandas makes one with gaps
    return path


@pytest.mark.parametrize("year", [2016, "2016", 2016.0])
def test_where_matches_whatever_the_types(table, year):
    docs = load_documents(table, label_field="member", where={"year": year})
    assert docs.texts == [ROWS[0]["text"], ROWS[2]["text"]]
    assert load_documents(table, where={"year": year, "member": 0, "flag": True}).texts == [ROWS[2]["text"]]
    assert load_documents(table, where={"ratio": 1, "flag": False}).texts == [ROWS[1]["text"]]


def test_where_on_a_missing_column_or_value_names_the_file_and_key(table):
    with pytest.raises(VerifierError, match=r"d\.\w+: where key 'yr' is not a column") as error:
        load_documents(table, where={"yr": 2016})
    assert "\n" not in str(error.value)
    with pytest.raises(VerifierError, match=r"d\.\w+: no row has 'year' equal to 1999"):
        load_documents(table, where={"year": 1999})
    with pytest.raises(VerifierError, match=r"d\.\w+: no row matches all of where"):
        load_documents(table, where={"year": 2017, "member": 1})


def test_keys_generate_never_overwrites_either_key_without_force(tmp_path):
    key = tmp_path / "k.key"
    public = tmp_path / "k.key.pub"
    public.write_bytes(b"a public key already handed out")
    result = runner.invoke(app, ["keys", "generate", "--out", str(key)])
    assert result.exit_code == 2 and "k.key.pub: exists" in result.output
    assert public.read_bytes() == b"a public key already handed out" and not key.exists()

    result = runner.invoke(app, ["keys", "generate", "--out", str(key), "--force"])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert not list(tmp_path.glob(".*.partial"))

    private = key.read_bytes()
    public.unlink()
    with pytest.raises(VerifierError, match=r"k\.key: exists; refusing"):
        generate_key(key)
    assert key.read_bytes() == private and not public.exists()


def test_testbed_build_into_a_folder_of_another_testbed_is_one_clear_error(tmp_path, monkeypatch):
    from verifier.testbed import build
    from verifier.testbed.build import PRESETS
    from verifier.testbed.pool import bundled_pool

    monkeypatch.setattr(build, "_build", lambda *a, **k: pytest.fail("trained instead of refusing"))
    folder = tmp_path / "tb"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"digest": "0123456789abcdef"}))
    result = runner.invoke(app, ["testbed", "build", "--out", str(folder)])
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    assert "tb: holds a different testbed (digest 0123456789abcdef" in errors[0]

    digest = PRESETS["small"].digest(bundled_pool())
    (folder / "manifest.json").write_text(json.dumps({"digest": digest}))
    assert build.build_testbed(PRESETS["small"], out=folder).manifest == {"digest": digest}  # the same testbed: reused

    (folder / "manifest.json").unlink()
    (folder / "notes.txt").write_text("someone's files")
    with pytest.raises(VerifierError, match="tb: exists and holds no testbed"):
        build.build_testbed(PRESETS["small"], out=folder)


@pytest.mark.parametrize("signal", [MinK, GapK, MinKPlusPlus])
@pytest.mark.parametrize("k", [2, 0, -0.1, math.nan])
def test_lowest_k_signals_refuse_k_outside_zero_one(signal, k):
    with pytest.raises(
        VerifierError,
        match=rf"^signal {signal.name}: k: Input should be (greater than 0|less than or equal to 1) \(got {k}\)$",
    ):
        signal(k=k)
    assert signal(k=1).k == 1 and signal().k == 0.2


def year_sets(newer_suspect: bool, separated: bool, n: int = 200) -> tuple[list[str], np.ndarray]:
    """A suspect set (label 1) and another; with ``separated`` one set is dated 2019-23, the other 2000-17."""
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    newer = labels == int(newer_suspect)
    years = (
        np.where(newer, rng.integers(2019, 2024, 2 * n), rng.integers(2000, 2018, 2 * n))
        if separated
        else rng.integers(2000, 2024, 2 * n)
    )
    return [f"Something happened in {year}." for year in years], labels


@pytest.mark.parametrize("newer_suspect", [True, False])
def test_latest_year_baseline_reads_either_direction_out_of_fold(newer_suspect):
    texts, labels = year_sets(newer_suspect, separated=True)
    assert evaluate_scores("y", latest_year_baseline(texts, labels, seed=0), labels).auc > 0.95
    texts, labels = year_sets(newer_suspect, separated=False)
    m = evaluate_scores("y", latest_year_baseline(texts, labels, seed=0), labels)
    assert m.auc_ci_low < 0.5 < m.auc_ci_high


def test_hub_ids_may_pin_a_revision_that_enters_the_source():
    from verifier.targets import resolve_model

    pinned = resolve_model("org/name@0123abcd")
    assert (pinned.location, pinned.revision, pinned.is_local) == ("org/name", "0123abcd", False)
    assert resolve_model("org/name").revision is None
    with pytest.raises(VerifierError, match="hub id"):
        resolve_model("org/name@")


def test_a_target_leaves_torchs_thread_count_as_it_found_it(tiny_model_dir):
    import torch

    from verifier.targets import ScoringOptions
    from verifier.targets.kinds.causal_lm import CausalLMTarget

    before = torch.get_num_threads()
    target = CausalLMTarget(str(tiny_model_dir), ScoringOptions(threads=1 if before > 1 else 2))
    target.score(["A short text about an event in 2016, scored to check the thread count."])
    assert torch.get_num_threads() == before
