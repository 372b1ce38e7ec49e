"""`verifier score --engine ray`: a real local Ray, the same table as in one process, resumable."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from verifier.cli import app
from verifier.scoring.table import ScoreTable

ray = pytest.importorskip("ray", reason="the optional extra verifier[ray] is not installed")
runner = CliRunner()
SIGNALS = ["--signal", "loss", "--signal", "min_k", "--signal", "min_k_pp"]


@pytest.fixture(scope="module")
def local_ray():
    """One small local Ray for the module (starting one costs seconds); the engine reuses it."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 << 20)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def docs(wikimia64: list[dict], tmp_path_factory) -> Path:
    """21 labelled documents with a repeated text, as JSONL; one text reads as a number and sits
    beside an integer too large for 64 bits (a reader that guesses types would change both)."""
    rows = [{"text": r["text"], "label": r["label"], "year": 2016} for r in wikimia64[:19]] + [dict(wikimia64[0])]
    rows.append({"text": "0012.50", "label": 0, "year": 10**30})
    path = tmp_path_factory.mktemp("ray-docs") / "docs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def cached_rows(cache: Path) -> int:
    with sqlite3.connect(cache / "token_scores.sqlite") as db:
        return db.execute("SELECT count(*) FROM token_scores_v2").fetchone()[0]


def score(model: Path, data: Path, out: Path, cache: Path, *extra: str, **invoke):
    return runner.invoke(
        app,
        [
            "score",
            "--model",
            str(model),
            "--data",
            str(data),
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
            "--max-tokens",
            "48",
            *SIGNALS,
            *extra,
        ],
        **invoke,
    )


def disk_full(*args, **kwargs):
    """The run stops after every batch was scored, while the table is being written."""
    raise OSError(28, "No space left on device")


def test_ray_writes_the_table_one_process_writes(local_ray, tiny_model_dir, docs, tmp_path):
    result = score(
        tiny_model_dir, docs, tmp_path / "ray.parquet", tmp_path / "c1", "--engine", "ray", "--ray-batch-docs", "6"
    )
    assert result.exit_code == 0, result.output
    inproc = score(tiny_model_dir, docs, tmp_path / "one.parquet", tmp_path / "c2")
    assert inproc.exit_code == 0, inproc.output
    a, b = ScoreTable.read(tmp_path / "ray.parquet"), ScoreTable.read(tmp_path / "one.parquet")
    assert list(a.frame.columns) == list(b.frame.columns)
    for column in ("doc", "text", "text_sha256", "label", "n_tokens"):
        assert a.frame[column].tolist() == b.frame[column].tolist(), column
    for name in b.signal_names:
        np.testing.assert_allclose(a.signal(name), b.signal(name), atol=1e-6, rtol=0, err_msg=name)
    assert a.metadata["target"] == b.metadata["target"] and a.metadata["signals"] == b.metadata["signals"]
    assert a.metadata["engine"]["name"] == "ray" and a.metadata["engine"]["batch_docs"] == 6
    assert not (tmp_path / ".ray.parquet.parts").exists()  # parts removed once the table is written
    assert runner.invoke(app, ["evaluate", str(tmp_path / "ray.parquet"), "--json"]).exit_code == 0


def test_an_interrupted_ray_run_resumes_from_its_parts_and_refuses_forged_rows(
    local_ray, tiny_model_dir, docs, tmp_path, monkeypatch
):
    import verifier.scoring.ray as ray_scoring

    parquet = tmp_path / "docs.parquet"
    rows = [json.loads(line) for line in docs.read_text().splitlines()]
    pd.DataFrame({"text": [r["text"] for r in rows], "label": [r["label"] for r in rows]}).to_parquet(parquet)
    out = tmp_path / "scores.parquet"

    with monkeypatch.context() as patch:
        patch.setattr(ray_scoring, "_write_table", disk_full)
        result = score(tiny_model_dir, parquet, out, tmp_path / "first", "--engine", "ray", "--ray-batch-docs", "5")
        assert result.exit_code == 2 and "No space left" in result.output
    parts = sorted((tmp_path / ".scores.parquet.parts").glob("*/*.parquet"))
    assert len(parts) >= 5 and not out.exists()
    digests = [set(pd.read_parquet(part)["text_sha256"]) for part in parts]
    for part in parts[:2]:
        part.unlink()  # as if the crash had come before these batches were written
    parts[2].write_bytes(b"PAR1 cut short")  # and this one was written halfway (its documents are scored again)
    forged = pd.read_parquet(parts[3])
    forged.loc[0, "signal.loss"] += 5.0  # a raised log-likelihood written into a part, its tag kept
    forged.to_parquet(parts[3])
    extra = pd.read_parquet(parts[4])
    extra["signal.evil"] = (
        9.9  # a column no signal wrote: its rows fail their tags, and the column must not reach the table
    )
    extra.to_parquet(parts[4])
    (parts[0].parent / "dir.parquet").mkdir()  # not a part at all
    # A document is scored again when no intact part holds it (the same text can sit in two parts).
    intact = set().union(*digests[5:])
    lost = set().union(*digests[:3], digests[4]) - set().union(*digests[3:4], intact) | (
        {forged.loc[0, "text_sha256"]} - intact
    )
    fresh = tmp_path / "second"
    result = score(tiny_model_dir, parquet, out, fresh, "--engine", "ray", "--ray-batch-docs", "5")
    assert result.exit_code == 0, result.output
    rescored = cached_rows(fresh)
    assert rescored == len(lost) < 20  # only the lost and forged documents were scored again, not all 20 distinct ones
    whole = score(tiny_model_dir, parquet, tmp_path / "whole.parquet", tmp_path / "third")
    assert whole.exit_code == 0, whole.output
    a, b = ScoreTable.read(out), ScoreTable.read(tmp_path / "whole.parquet")
    assert a.frame["text_sha256"].tolist() == b.frame["text_sha256"].tolist() and list(a.frame.columns) == list(
        b.frame.columns
    )
    for name in b.signal_names:
        np.testing.assert_allclose(a.signal(name), b.signal(name), atol=1e-6, rtol=0, err_msg=name)


def test_parts_scored_with_other_weights_are_not_reused(
    local_ray, tiny_model_dir, tiny_reference_dir, docs, tmp_path, monkeypatch
):
    import verifier.scoring.ray as ray_scoring

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    out = tmp_path / "scores.parquet"
    with monkeypatch.context() as patch:
        patch.setattr(ray_scoring, "_write_table", disk_full)
        assert score(model, docs, out, tmp_path / "c", "--engine", "ray").exit_code == 2
    shutil.rmtree(model)
    shutil.copytree(tiny_reference_dir, model)  # other weights under the same name
    result = score(model, docs, out, tmp_path / "c", "--engine", "ray")
    assert result.exit_code == 0, result.output
    assert score(model, docs, tmp_path / "one.parquet", tmp_path / "c").exit_code == 0
    a, b = ScoreTable.read(out), ScoreTable.read(tmp_path / "one.parquet")
    assert a.metadata["target"]["digests"] == b.metadata["target"]["digests"]
    np.testing.assert_allclose(a.signal("loss"), b.signal("loss"), atol=1e-6, rtol=0)


def test_bad_input_and_unsupported_runs_are_refused_before_ray_starts(tiny_model_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine text here", "label": 1}\n{"text": "   ", "label": 0}\n')
    result = score(tiny_model_dir, bad, tmp_path / "o.parquet", tmp_path / "c", "--engine", "ray")
    assert result.exit_code == 2 and "line 2: empty text" in result.output and "Traceback" not in result.output
    result = score(
        tiny_model_dir, bad, tmp_path / "o.parquet", tmp_path / "c", "--engine", "ray", "--signal", "prefix_lcs_token"
    )
    assert result.exit_code == 2 and "prefix_lcs_token" in result.output
    result = runner.invoke(
        app,
        [
            "score",
            "--model",
            "openai-compatible:http://127.0.0.1:9/v1#m",
            "--data",
            str(bad),
            "--engine",
            "ray",
            "--signal",
            "prefix_lcs_token",
        ],
    )
    assert result.exit_code == 2 and "open-weight" in result.output
    assert not (tmp_path / ".o.parquet.parts").exists()  # nothing was scored


def test_an_audit_reads_the_arrays_a_ray_run_scored(local_ray, small_testbed, tmp_path):
    """`audit --engine ray` scores the claim's sets on Ray into the cache under the audit's own keys:
    the audit then computes no forward pass of its own for them, and its findings are the same."""
    from verifier.audit import run_audit
    from verifier.claims import load_claim
    from verifier.scoring.ray import RayOptions, prescore_claim
    from verifier.targets import ScoreCache
    from verifier.trust.digests import findings_digest

    folder = tmp_path / "claim"
    (folder / "testbed").mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parents[2] / "verifier" / "examples" / "testbed.yaml", folder / "claim.yaml")
    shutil.copytree(small_testbed.folder, folder / "testbed" / "build")
    prescored = prescore_claim(load_claim(folder / "claim.yaml"), tmp_path / "ray-cache", RayOptions())
    cache = ScoreCache(tmp_path / "ray-cache")
    on_ray = run_audit(folder / "claim.yaml", cache=cache)
    assert (
        prescored["documents"] > 20 and cache.counts.served > 20 and cache.counts.stored == 0
    )  # not one forward pass in the audit
    plain_cache = ScoreCache(tmp_path / "plain-cache")
    plain = run_audit(folder / "claim.yaml", cache=plain_cache)
    assert plain_cache.counts.stored == cache.counts.served
    assert findings_digest(on_ray.findings) == findings_digest(plain.findings)


def test_a_pool_the_cluster_cannot_hold_is_refused_instead_of_waiting_forever():
    from verifier.errors import VerifierError
    from verifier.scoring.ray import RayOptions

    two_cores = {"CPU": 2.0}
    RayOptions(actors=2, actor_cpus=0.5).check_fits(two_cores, "cpu")
    for options, device, why in (
        (RayOptions(actors=3), "cpu", "needs 1.5 CPUs"),
        (RayOptions(actor_cpus=8), "cpu", "needs 8 CPUs"),
        (RayOptions(actor_gpus=1), "cpu", "pass --device cuda"),
        (RayOptions(actor_gpus=1), "cuda", "has 0"),
    ):
        with pytest.raises(VerifierError, match=why):
            options.check_fits(two_cores, device)
    for bad in ({"actor_cpus": float("nan")}, {"actor_cpus": float("inf")}, {"actors": 0}, {"actor_gpus": -1}):
        with pytest.raises(VerifierError):
            RayOptions(**bad)
