"""The ground-truth testbed, and set-level soundness on it: detect members, refuse date shifts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import chi2_contingency
from typer.testing import CliRunner

import verifier.testbed.build as build_module
from verifier.cli import app
from verifier.data import load_documents
from verifier.dataset_inference.rules import DocumentSet, SetStatus, SetTestParams, run_set_membership
from verifier.errors import VerifierError
from verifier.scoring.table import score_documents
from verifier.stats.metrics import evaluate_scores
from verifier.targets import ScoreCache, ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.testbed.build import PRESETS, build_testbed
from verifier.testbed.pool import NEW, OLD

runner = CliRunner()


@pytest.fixture(scope="session")
def scored(small_testbed, tmp_path_factory):
    docs = load_documents(small_testbed.documents, label_field="member")
    target = CausalLMTarget(str(small_testbed.model_dir), ScoringOptions(batch_tokens=32 * 128))
    table = score_documents(docs, target, cache=ScoreCache(tmp_path_factory.mktemp("cache")))
    rows = [json.loads(line) for line in small_testbed.documents.read_text().splitlines()]
    return table, np.array([r["period"] for r in rows]), target


def test_manifest_records_membership_independent_of_period(small_testbed):
    m = small_testbed.manifest
    docs = m["documents"]
    assert len(docs) == PRESETS["small"].max_docs
    counts = [
        [sum(d["member"] == member and d["period"] == period for d in docs) for member in (True, False)]
        for period in (OLD, NEW)
    ]
    assert min(min(row) for row in counts) > 50  # same-period held-out sets exist in both periods
    assert chi2_contingency(counts).pvalue > 0.001
    lines = [json.loads(line) for line in small_testbed.documents.read_text().splitlines()]
    assert [bool(r["member"]) for r in lines] == [d["member"] for d in docs]
    assert [d["copies"] for d in m["marks"]] == [1, 4, 16] * 8  # the bundled example's 24 marked documents, in turn
    carried = [
        [sum(bool(d["identifier"]) == i and d["member"] == member for d in docs) for member in (True, False)]
        for i in (True, False)
    ]
    assert (
        min(min(row) for row in carried) > 40 and chi2_contingency(carried).pvalue > 0.001
    )  # identifiers independent of membership
    assert all(("Archive record: " in r["text"]) == bool(r["identifier"]) for r in lines)
    assert m["train_loss_per_epoch"][-1] < m["train_loss_per_epoch"][0]


def test_rebuild_comes_from_the_cache(small_testbed, monkeypatch):
    monkeypatch.setattr(build_module, "_build", lambda *a, **k: pytest.fail("rebuilt instead of reusing"))
    again = build_testbed(PRESETS["small"], out=small_testbed.folder)
    assert again.manifest == small_testbed.manifest
    with pytest.raises(VerifierError, match="different testbed"):
        build_testbed(PRESETS["small"].model_copy(update={"seed": 1}), out=small_testbed.folder)


def test_members_score_higher_than_non_members(scored):
    table, _, _ = scored
    loss = evaluate_scores("loss", table.signal("loss"), table.labels)
    assert loss.auc_ci_low > 0.6


def test_marked_documents_inserted_more_often_are_more_likely(small_testbed, scored):
    from verifier.testbed.build import marked_documents

    _, _, target = scored
    inserted = {d["id"]: d["copies"] for d in small_testbed.manifest["marks"]}
    docs = marked_documents("example")
    mean_logprob = {d["id"]: float(s.logprob.mean()) for d, s in zip(docs, target.score([d["text"] for d in docs]))}
    by_copies = {k: np.mean([v for i, v in mean_logprob.items() if inserted[i] == k]) for k in (1, 4, 16)}
    assert by_copies[1] < by_copies[4] < by_copies[16]


def test_set_test_detects_members_and_passes_its_control(scored):
    table, period, _ = scored
    texts = np.array(table.frame["text"].tolist(), dtype=object)
    features = np.column_stack([table.signal(n) for n in table.signal_names])
    member = table.labels == 1
    old_m = np.flatnonzero(member & (period == OLD))
    old_nm = np.flatnonzero(~member & (period == OLD))
    n = min(len(old_m), len(old_nm) // 2)

    def pick(idx, origin):
        return DocumentSet(texts[idx].tolist(), features[idx], 2016, origin)

    finding = run_set_membership(
        pick(old_m[:n], "members"),
        pick(old_nm[:n], "heldout"),
        table.signal_names,
        control=pick(old_nm[n : 2 * n], "control"),
        params=SetTestParams(n_permutations=199, shift_permutations=199),
    )
    assert finding.shift.exchangeable
    assert finding.status == SetStatus.SIGNIFICANT and finding.result.p_value < 0.01
    assert not finding.control.result.significant


def test_date_shifted_reference_is_refused(scored):
    table, period, _ = scored
    texts = np.array(table.frame["text"].tolist(), dtype=object)
    features = np.column_stack([table.signal(n) for n in table.signal_names])
    nonmember = table.labels == 0
    old, new = np.flatnonzero(nonmember & (period == OLD))[:60], np.flatnonzero(nonmember & (period == NEW))[:60]
    params = SetTestParams(n_permutations=199, shift_permutations=199)
    finding = run_set_membership(
        DocumentSet(texts[old].tolist(), features[old]),
        DocumentSet(texts[new].tolist(), features[new]),
        table.signal_names,
        params=params,
    )
    assert finding.status == SetStatus.SHIFT_DETECTED and finding.result is None
    assert "distribution shift" in finding.reason and finding.shift.ci_low > 0.6
    # Declared years alone suffice, whatever the texts look like and with no cutoff given.
    by_date = run_set_membership(
        DocumentSet(texts[old[:30]].tolist(), features[old[:30]], year=2016),
        DocumentSet(texts[old[30:]].tolist(), features[old[30:]], year=2024),
        table.signal_names,
        params=params,
    )
    assert by_date.status == SetStatus.DATES_DIFFER


def test_cli_testbed_and_power(small_testbed, scored, tmp_path):
    result = runner.invoke(app, ["testbed", "build", "--preset", "small", "--out", str(small_testbed.folder)])
    assert result.exit_code == 0, result.output
    assert str(small_testbed.folder) in result.stdout
    table, _, _ = scored
    path = tmp_path / "scores.parquet"
    table.write(path)
    result = runner.invoke(
        app,
        [
            "power",
            str(path),
            "--sizes",
            "25,50,5000",
            "--trials",
            "100",
            "--permutations",
            "49",
            "--out",
            str(tmp_path / "power.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "power.json").read_text())
    assert [row["n"] for row in data["rows"]] == [25, 50] and data["skipped_sizes"] == [5000]
    assert data["rows"][1]["power"]["value"] > data["rows"][1]["fpr"]["value"]


@pytest.mark.slow
def test_finetune_testbed_memorises_its_members_once_each(finetuned_testbed, smollm2):
    """The fine-tuned testbed: same-period documents, a seeded half trained on once; fine-tuning
    raises the members' log-probs more than the non-members' (the gain separates them)."""
    rows = [json.loads(line) for line in finetuned_testbed.documents.read_text().splitlines()]
    assert len(rows) == 64 and {r["period"] for r in rows} == {NEW} and 20 <= sum(r["member"] for r in rows) <= 44
    manifest = finetuned_testbed.manifest
    assert (
        manifest["config"]["base"] == "smollm2-135m"
        and manifest["config"]["epochs"] == 1
        and len(manifest["train_loss_per_epoch"]) == 1
    )
    docs = load_documents(finetuned_testbed.documents, label_field="member")
    tuned = score_documents(docs, CausalLMTarget(str(finetuned_testbed.model_dir)), signal_names=["loss"]).signal(
        "loss"
    )
    base = score_documents(docs, smollm2, signal_names=["loss"]).signal("loss")
    member = np.array([r["member"] for r in rows]) == 1
    gain = tuned - base
    assert (
        gain[member].mean() > 2 * gain[~member].mean() > 0
    )  # members gained more; non-members a little (same period, same style)
    assert evaluate_scores("gain", gain, member.astype(int)).auc > 0.75  # 0.90 [0.81, 0.97] when written


@pytest.mark.slow
def test_dataset_inference_through_the_api_on_the_finetuned_testbed(finetuned_testbed, tmp_path, monkeypatch):
    """The set-level route with output-only features, the fine-tuned model behind the real server:
    it runs to a status of its table with a black-box signal as its feature (20 documents a set and
    the cheapest attack, to stay CI-sized; at this size the attack has little power, so the status
    is what the data give, not asserted)."""
    import yaml

    from verifier.audit import run_audit
    from verifier.boundary.resources import resource
    from verifier.targets.serving import start_server

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    rows = [json.loads(line) for line in finetuned_testbed.documents.read_text().splitlines()]
    for name, member in (("members", 1), ("others", 0)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join([json.dumps({"text": r["text"]}) + "\n" for r in rows if r["member"] == member][:20])
        )
    policy = (resource("examples", "data", "policies") / "api-example.yaml").read_text()
    policy = policy.replace("signals: [prefix_lcs_word, prefix_lcs_token, name_cloze]", "signals: [name_cloze]")
    (tmp_path / "policy.yaml").write_text(policy)
    with start_server(finetuned_testbed.model_dir) as server:
        claim = {
            "claim": {
                "id": "api-di",
                "statement": "The served model was trained on these texts.",
                "kind": "trained_on",
                "made_by": "test",
            },
            "model": {"target": server.spec, "api": {"concurrency": 2}},
            "evidence": {
                "suspect": {"path": "members.jsonl", "year": 2023},
                "heldout": {"path": "others.jsonl", "year": 2023},
            },
            "policy": "policy.yaml",
        }
        (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
        result = run_audit(tmp_path / "claim.yaml", cache=ScoreCache(tmp_path / "cache"))
    record = next(r for r in result.findings["path"] if r["route"] == "dataset_inference")
    assert record["status"] in ("decided", "ran"), record["reason"]
    metrics = record["outcome"]["metrics"]
    assert metrics["signals"] == ["name_cloze"] and metrics["not_computable"] == {}
    assert metrics["set_test"]["status"] in ("significant", "not_significant", "exchangeability_not_established")
    assert (
        30 <= result.usage["target"]["requests_sent"] <= 40
        and result.findings["model"]["target"]["kind"] == "openai_compatible"
    )


def test_testbeds_measured_for_the_validation_table_keep_their_names():
    """Fields added to the config later (background, bf16) at their defaults leave a preset's digest alone, so the
    testbeds the shipped table names can still be rebuilt and found by name."""
    from verifier.testbed.build import preset_config
    from verifier.testbed.pool import bundled_pool
    from verifier.validation import load_table

    (run,) = [r for r in load_table().runs if r.benchmark == "fraction"]
    pool = bundled_pool()
    assert [preset_config("light", seed=s).digest(pool) for s in range(len(run.testbeds))] == run.testbeds
    assert preset_config("pretrain-like").digest(pool) not in run.testbeds


@pytest.mark.slow
def test_pretrain_like_testbed_sees_each_member_once_among_background_text(tmp_path_factory):
    """The pretraining-like preset at test size: SmolLM2 continued-pretrained one pass over members, marks and
    real background windows; the manifest says where its numbers hold (size, passes, member share, CPU), and one
    pass at its learning rate raises the members' log-probs more than the non-members'."""
    config = PRESETS["pretrain-like-small"]
    testbed = build_testbed(config, out=tmp_path_factory.mktemp("testbed") / "pretrain-like-small")
    manifest = testbed.manifest
    tokens, regime = manifest["tokens"], manifest["regime"]
    assert tokens["background"] > tokens["members"] > 0 and tokens["marks"] > 0
    assert regime["passes"] == 1 and 100e6 < regime["parameters"] < 200e6
    assert regime["member_token_share"] == round(tokens["members"] / sum(tokens.values()), 4) < 0.5
    assert "cores" in manifest["cpu"] and len(manifest["train_loss_per_epoch"]) == 1
    rows = [json.loads(line) for line in testbed.documents.read_text().splitlines()]
    assert len(rows) == config.max_docs and any(r["identifier"] for r in rows)
    docs = load_documents(testbed.documents, label_field="member")
    options = ScoringOptions(max_tokens=config.seq_len)
    tuned = score_documents(docs, CausalLMTarget(str(testbed.model_dir), options), signal_names=["loss"])
    base = score_documents(docs, CausalLMTarget("smollm2-135m", options), signal_names=["loss"])  # the same tokens
    gain = tuned.signal("loss") - base.signal("loss")
    member = docs.labels == 1
    assert gain[member].mean() > gain[~member].mean()
