"""Reasoning-trace attacks: reading traces and their bad input, BlackSpectrum and the naive trace
attacks against a scripted reasoning server (real all-MiniLM-L6-v2 encoder, real HTTP client and
cache), audits that cannot score enough traces, and the real SmolLM2 server prompted to reason."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT, read_jsonl
from fault_server import FaultServer, scripted_trace
from sklearn.metrics import roc_auc_score

from verifier.data import Documents
from verifier.errors import VerifierError
from verifier.scoring.table import FAILURE_PREFIX, score_documents
from verifier.signals import REGISTRY, make_signals
from verifier.signals.base import ScoredDocument
from verifier.signals.traces.anchors import (
    next_token_entropy,
    recall_set,
    select,
    synthetic_candidates,
    template_candidates,
)
from verifier.signals.traces.base import TraceSignal, TracesUnusable
from verifier.signals.traces.blackspectrum import BlackSpectrum, denoised
from verifier.targets import ScoreCache, load_target
from verifier.targets.queries import Answer

TRACE_SIGNALS = ["blackspectrum", "thinking_tokens", "trace_consistency_char", "trace_consistency_token", "trace_judge"]
SMALL = {"blackspectrum": {"k": 5, "gamma": 5}}


@pytest.fixture(scope="module")
def reasoner():
    with FaultServer() as server:
        yield server


@pytest.fixture(scope="module")
def wiki() -> tuple[list[str], np.ndarray]:
    """40 WikiMIA-64 texts, every second one "known" to the scripted reasoner."""
    rows = read_jsonl(ROOT / "verifier/examples/data/wikimia/length64.jsonl")[:40]
    return [r["text"] for r in rows], np.array([i % 2 for i in range(40)])


def knows(texts: list[str], labels: np.ndarray, anchors: bool = True) -> set[str]:
    """What the scripted reasoner recalls: the labelled members' openings (and the recall anchors)."""
    return {t[:40] for t, y in zip(texts, labels) if y} | ({r["text"] for r in recall_set()} if anchors else set())


def scored(
    server: FaultServer, texts: list[str], signals: list[str], cache=None, params=SMALL, fault: str = "reasoner"
):
    return score_documents(
        Documents(texts, None, "t"),
        load_target(server.spec(fault)),
        signal_names=signals,
        cache=cache,
        signal_params=params,
    )


# --- reading traces ------------------------------------------------------------------------------


def test_traces_are_read_from_the_reasoning_field_or_the_prompted_reply_and_bad_ones_are_named():
    signal = REGISTRY["blackspectrum"]()
    ok = "I recognise this text and recall that the next word is bush."
    assert signal.read(Answer(text="bush", reasoning=ok)).source == "reasoning field"
    # cut at max_tokens while still thinking: no answer, but the trace is there
    assert signal.read(Answer(error="empty completion", reasoning=ok)).text == ok
    prompted = signal.read(Answer(text=f"Reasoning: {ok}\n\n**Answer:** bush"))
    assert (prompted.text, prompted.source) == (ok, "prompted reply")
    assert signal.read(Answer(text="Answer: bush")).problem == "no trace (the reply holds only an answer)"
    assert (
        signal.read(Answer(error="refusal", reasoning="The user wants copyrighted text, so I will decline.")).problem
        == "refusal"
    )
    assert (
        signal.read(Answer(text="bush", reasoning="  ")).problem == "empty trace"
    )  # a blank trace field: the reply is read, one word
    assert signal.read(Answer(text="Reasoning: hmm. Answer: bush")).problem == "empty trace"
    german = (
        "Ich erkenne diesen Text nicht, aber das nächste Wort ist vermutlich ein Substantiv, weil der Satz noch "
        "offen ist."
    )
    assert signal.read(Answer(text="x", reasoning=german)).problem == "trace not in English"
    chinese = "我认识这段文字，它来自一首很有名的诗，下一个词应该是灌木丛，我很确定这一点。" * 2
    assert signal.read(Answer(text="x", reasoning=chinese)).problem == "trace not in English"


def test_trace_signals_are_registered_output_only_and_validate_their_parameters():
    for name in TRACE_SIGNALS + ["trace_compression"]:
        assert (
            issubclass(REGISTRY[name], TraceSignal)
            and REGISTRY[name].needs == {"answers"}
            and not REGISTRY[name].by_default
        )
    with pytest.raises(VerifierError, match="k: Input should be greater than or equal to 1"):
        make_signals(["blackspectrum"], {"answers"}, {"blackspectrum": {"k": 0}})
    with pytest.raises(VerifierError, match="unknown parameter.*anchors.*parameters: .*anchor_traces"):
        make_signals(["blackspectrum"], {"answers"}, {"blackspectrum": {"anchors": 5}})
    with pytest.raises(VerifierError, match="judge must be"):
        make_signals(["trace_judge"], {"answers"}, {"trace_judge": {"judge": "http://elsewhere"}})
    with pytest.raises(VerifierError, match="traces: Input should be a valid integer"):
        make_signals(["trace_consistency_char"], {"answers"}, {"trace_consistency_char": {"traces": True}})
    with pytest.raises(VerifierError, match="traces: Input should be greater than or equal to 2"):
        make_signals(["trace_consistency_char"], {"answers"}, {"trace_consistency_char": {"traces": 1}})
    with pytest.raises(VerifierError, match="need a temperature above 0"):
        make_signals(["thinking_tokens"], {"answers"}, {"thinking_tokens": {"traces": 3, "temperature": 0}})
    for bad in ({"k": 5.5}, {"k": "5"}, {"denoise": "no"}, {"encoder": 5}):
        with pytest.raises(VerifierError, match=f"signal blackspectrum: {next(iter(bad))}: Input should be"):
            make_signals(["blackspectrum"], {"answers"}, {"blackspectrum": bad})
    with pytest.raises(VerifierError, match="threshold: Input should be less than or equal to 1"):
        make_signals(["thinking_tokens"], {"answers"}, {"thinking_tokens": {"threshold": 5}})


class FixedTools:
    """Tools whose encoder maps each text to a given vector (to check BlackSpectrum's arithmetic)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors, self.used = vectors, {}

    def embed(self, encoder: str, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def test_blackspectrum_scores_one_at_the_recall_anchor_and_zero_at_the_inference_anchor():
    """Eq. 5-8 by hand: recall traces at (1, 0, 0), synthetic ones at (0, 1, 0), sequences along
    (0, 0, 1) so denoising leaves the traces as they are; a trace between them scores in between."""
    signal = BlackSpectrum(k=3, gamma=3, anchor_traces=2)
    sets = select(3, 3)
    answers, vectors = {}, {}
    for side, seqs in (("recall", sets.recall), ("synthetic", sets.synthetic)):
        for seq in seqs:
            for i, query in enumerate(signal.trace_queries(seq, 2)):
                trace = f"{side} trace {i} for {seq}, written out in words"
                answers[query.key] = Answer(text="x", reasoning=trace)
                vectors[trace] = np.array([1.0, 0, 0]) if side == "recall" else np.array([0, 1.0, 0])
            vectors[seq] = np.array([0, 0, 1.0])
    docs = [ScoredDocument(text="a passage", answers=answers)]
    for trace, where in (
        ("at recall", [1.0, 0, 0]),
        ("at inference", [0, 1.0, 0]),
        ("between", [0.75, 0.25, 0]),
        ("beyond recall", [2.0, -1.0, 0]),
    ):
        vectors[trace] = np.array(where)
    vectors["a passage"] = np.array([0, 0, 1.0])
    items = [
        ("a passage", ["at recall"]),
        ("a passage", ["at inference"]),
        ("a passage", ["between"]),
        ("a passage", ["beyond recall"]),
    ]
    assert np.allclose(signal.score_traces(items, docs, FixedTools(vectors)), [1.0, 0.0, 0.75, 2.0])
    # the attacker's case: both sides give the same trace; denoising against different sequences
    # would still make an "axis" out of the sequences' wording - refused instead
    same = {k: Answer(text="x", reasoning="the same words for everything") for k in answers}
    vectors["the same words for everything"] = np.array([0.5, 0.5, 0.2])
    vectors |= {seq: np.array([0, 0.1 * i, 1.0]) for i, seq in enumerate(sets.recall + sets.synthetic)}
    with pytest.raises(TracesUnusable, match="anchor traces do not differ"):
        signal.score_traces(items, [ScoredDocument(text="a passage", answers=same)], FixedTools(vectors))


def test_blackspectrum_refuses_anchors_lost_in_transport_and_anchors_that_changed_between_sets(reasoner, wiki):
    """A transport failure is not cached, so the next set's pass would ask again and could place
    its axis elsewhere: no document is scored on such anchors (the reviewer's demo: suspect and
    held-out scored on different axes differed at p = 1.7e-11 with no training)."""
    texts, labels = wiki
    signal = BlackSpectrum(k=5, gamma=5)
    answers = {
        q.key: Answer(text="x", reasoning="I recall this proverb and the next word of it with certainty.")
        for q in signal.shared_queries()
    }
    first = signal.shared_queries()[0].key
    answers[first] = Answer(error="HTTP 503 after 5 attempts", transient=True)
    docs = [
        ScoredDocument(
            text=texts[0],
            answers=answers
            | {q.key: Answer(text="x", reasoning="Hmm, maybe a noun follows here.") for q in signal.queries(texts[0])},
        )
    ]
    out = signal.evaluate(docs, FixedTools({}))
    assert np.isnan(out.values).all() and out.reasons == [
        "1 recall anchor queries failed in transport: re-run to complete them "
        "(the anchors must be the same for every set)"
    ]


@pytest.mark.parametrize(
    "reply, rating",
    [
        ("9", 9.0),
        ("Rating: 10", 10.0),
        ("0", 0.0),
        ("-7", None),
        ("3.5", None),
        ("100", None),
        ("nan", None),
        ("1e999", None),
        ("I would say 4 out of 10", 4.0),
    ],
)
def test_the_judge_reads_only_a_rating_from_0_to_10(reply, rating):
    """A README-only attacker's find: a judge replying "-7" was read as 7 (near the top of the scale)."""
    from verifier.signals.traces.trace_judge import RATING

    match = RATING.search(reply)
    assert (float(match.group(1)) if match else None) == rating


def test_denoising_removes_the_sequence_component():
    rng = np.random.default_rng(0)
    traces, sequences = rng.normal(size=(6, 8)), rng.normal(size=(6, 8))
    out = denoised(traces, sequences)
    assert np.allclose(np.einsum("ij,ij->i", out, sequences), 0)
    assert np.allclose(denoised(sequences * 3, sequences), 0)  # a trace that only repeats its sequence keeps nothing


# --- anchors ---------------------------------------------------------------------------------------


def test_anchor_sets_ship_with_sources_and_entropy_selection_picks_open_endings():
    recall = recall_set()
    assert len(recall) == 50 and all(r["source"] and r["kind"] in {"proverb", "poem", "lyric"} for r in recall)
    candidates = synthetic_candidates()
    assert [c["text"] for c in candidates] == template_candidates()  # the shipped file is the seeded generator's output
    chosen = select(5, 10).synthetic
    assert min(c["entropy"] for c in candidates if c["text"] in chosen) >= max(
        c["entropy"] for c in candidates if c["text"] not in chosen
    )
    assert select(5, 10, entropy_selection=False).synthetic == [c["text"] for c in candidates[:10]]
    with pytest.raises(VerifierError, match="gamma"):
        select(5, 101)


@pytest.mark.slow
def test_shipped_entropies_are_smollm2s(smollm2):
    rows = synthetic_candidates()[:4]
    assert np.allclose(
        next_token_entropy([r["text"] for r in rows], smollm2.model, smollm2.tokenizer),
        [r["entropy"] for r in rows],
        atol=2e-3,
    )


# --- attacks on a scripted reasoning model ----------------------------------------------------------


def test_trace_attacks_find_the_texts_a_reasoning_model_recalls_and_follow_it_when_reversed(
    reasoner, wiki, tmp_path, monkeypatch
):
    """Members get recall-like traces, non-members inference-like ones (quoting the text, as real
    traces do): every trace attack separates them; with the roles swapped every AUC flips, so the
    scores follow the model's traces, not the texts."""
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    texts, labels = wiki
    cache = ScoreCache(tmp_path / "cache")
    reasoner.trace_for = scripted_trace(knows(texts, labels))
    table = scored(reasoner, texts, TRACE_SIGNALS, cache=cache)
    for name in TRACE_SIGNALS:
        assert roc_auc_score(labels, table.signal(name)) > 0.85, name

    def answered() -> int:  # requests for answers (a new target also probes what the server offers, live, never cached)
        return sum(1 for r in reasoner.requests if not {"echo", "prompt_logprobs", "top_logprobs"} & set(r["body"]))

    sent = answered()
    again = scored(reasoner, texts, TRACE_SIGNALS, cache=cache)
    assert answered() == sent  # every trace and judgement came from the cache
    assert np.allclose(again.frame.filter(like="signal.").to_numpy(), table.frame.filter(like="signal.").to_numpy())
    reasoner.trace_for = scripted_trace(knows(texts, 1 - labels))
    flipped = scored(reasoner, texts, ["blackspectrum", "trace_consistency_token"])
    for name in ("blackspectrum", "trace_consistency_token"):
        assert roc_auc_score(labels, flipped.signal(name)) < 0.15, name


def test_blackspectrum_scores_nothing_when_the_anchors_have_no_usable_traces(reasoner, wiki):
    """A model refusing the recall anchors (5 proverbs x 3 traces) leaves BlackSpectrum without an
    axis: every document NaN, with the reason - not a score measured from one anchor."""
    texts, labels = wiki
    recall = {r["text"] for r in recall_set()}
    inner = scripted_trace(set())
    reasoner.trace_for = lambda prompt, seed: (
        (None, "I'm sorry, but I can't help with that.") if any(r in prompt for r in recall) else inner(prompt, seed)
    )
    table = scored(reasoner, texts[:6], ["blackspectrum"])
    assert np.isnan(table.signal("blackspectrum")).all()
    assert set(table.frame[FAILURE_PREFIX + "blackspectrum"]) == {"too few usable recall anchor traces (0 of 15)"}


def test_a_model_without_traces_leaves_every_document_unscored_with_the_reason(reasoner, wiki):
    texts, _ = wiki
    reasoner.trace_for = lambda prompt, seed: (None, "Answer: the")
    table = scored(reasoner, texts[:6], ["thinking_tokens", "trace_consistency_char"])
    for name in ("thinking_tokens", "trace_consistency_char"):
        assert np.isnan(table.signal(name)).all()
        assert set(table.frame[FAILURE_PREFIX + name]) == {"no trace (the reply holds only an answer)"}
    reasoner.trace_for = lambda prompt, seed: (
        "Das ist ein bekannter Text, und ich erinnere mich an die Fortsetzung.",
        "das",
    )
    table = scored(reasoner, texts[:4], ["thinking_tokens"])
    assert set(table.frame[FAILURE_PREFIX + "thinking_tokens"]) == {"trace not in English"}


def audit(server: FaultServer, tmp_path, suspect: list[dict], heldout: list[dict], signals: list[str]) -> dict:
    """Run a trained_on audit of the scripted server with a trace-attack-only policy; the findings."""
    import yaml

    from verifier.audit import run_audit

    for name, part in (("suspect", suspect), ("heldout", heldout)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in part))
    params = {"signals": signals} | ({"signal_params": SMALL} if "blackspectrum" in signals else {})
    policy = {
        "name": "traces",
        "version": 1,
        "routes": [
            {
                "route": "dataset_inference",
                "grants": ["SUPPORTED", "CONTRADICTED", "REJECTED-METHOD"],
                "params": params,
            },
            {"route": "disclosure"},
        ],
    }
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
    claim = {
        "claim": {
            "id": "traces",
            "statement": "The served model was trained on these texts.",
            "kind": "trained_on",
            "made_by": "attack",
        },
        "model": {"target": server.spec("reasoner"), "api": {"retries": 0}},
        "policy": "policy.yaml",
        "evidence": {
            "suspect": {"path": "suspect.jsonl", "year": 2016},
            "heldout": {"path": "heldout.jsonl", "year": 2016},
        },
    }
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
    return run_audit(tmp_path / "claim.yaml", cache=ScoreCache(tmp_path / "cache")).findings


def test_an_audit_whose_traces_are_missing_for_one_set_is_inconclusive_with_the_reason(reasoner, tmp_path, monkeypatch):
    """The hostile case: a server that reasons on the suspect set but gives the held-out set no
    trace. Scoring the missing traces as anything would decide the test; the route concludes nothing."""
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    rows = [r for r in read_jsonl(ROOT / "verifier/examples/data/wikimia/length64.jsonl") if r["label"] == 1]
    suspect, heldout = rows[:30], rows[30:60]
    heads = [" ".join(r["text"].split()[:8]) for r in heldout]
    inner = scripted_trace({r["text"][:40] for r in suspect} | {r["text"] for r in recall_set()})
    reasoner.trace_for = lambda prompt, seed: (
        (None, "Answer: it") if any(h in prompt for h in heads) else inner(prompt, seed)
    )
    findings = audit(reasoner, tmp_path, suspect, heldout, ["blackspectrum", "trace_consistency_token"])
    record = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert findings["verdict"] == "INCONCLUSIVE" and record["verdict"] == "INCONCLUSIVE"
    assert record["outcome"]["status"] == "too_few_scored"
    assert (
        "30 of 30 heldout documents have no score (no trace (the reply holds only an answer): 30"
        in record["outcome"]["summary"]
    )
    assert findings["failure_reasons"]["heldout blackspectrum"] == {"no trace (the reply holds only an answer)": 30}
    runs = findings["signal_runs"]
    assert runs["suspect blackspectrum"]["traces from the reasoning field"] == 30
    assert (
        runs["suspect blackspectrum"]["anchor answers sha256"] == runs["heldout blackspectrum"]["anchor answers sha256"]
    )
    assert len(findings["signal_runs"]["encoder all-MiniLM-L6-v2"]["sha256"]) == 64


def test_an_endpoint_drifting_during_the_run_does_not_separate_the_sets(reasoner, tmp_path, monkeypatch):
    """An outside attacker's wrong SUPPORTED (p = 0.001, d = 24.8): a server confident for its
    first 150 trace requests and hesitant afterwards, the same for every text. Set after set, all
    suspect queries came first; the sets' queries are now asked in one shuffled batch, so drift
    falls on both sets alike and is noise to the test (within its 5% level), not an effect."""
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    rows = [r for r in read_jsonl(ROOT / "verifier/examples/data/wikimia/length64.jsonl") if r["label"] == 1]
    suspect, heldout = rows[:30], rows[30:60]
    served = []
    confident, hesitant = (
        scripted_trace({r["text"] for r in rows} | {r["text"] for r in recall_set()}),
        scripted_trace(set()),
    )

    def drifting(prompt: str, seed: int) -> tuple[str | None, str]:
        served.append(prompt)
        return (confident if len(served) <= 45 else hesitant)(prompt, seed)

    reasoner.trace_for = drifting
    findings = audit(reasoner, tmp_path, suspect, heldout, ["trace_consistency_token", "thinking_tokens"])
    first = served[:45]
    assert sum(any(r["text"][:40] in p for r in suspect) for p in first) > 10
    assert sum(any(r["text"][:40] in p for r in heldout) for p in first) > 10
    record = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert abs(record["outcome"]["metrics"]["test"]["effect_size"]) < 1.0


def test_an_endpoint_answering_as_two_models_during_the_run_decides_nothing(reasoner, tmp_path, monkeypatch):
    """A significant difference is no evidence of training when the endpoint changed the model
    behind its name mid-run (an alias repointed, an A/B route): INCONCLUSIVE, with both names."""
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    rows = [r for r in read_jsonl(ROOT / "verifier/examples/data/wikimia/length64.jsonl") if r["label"] == 1]
    suspect, heldout = rows[:30], rows[30:60]
    recalls, calls = scripted_trace({r["text"][:40] for r in suspect}), []

    def switching(prompt: str, seed: int) -> tuple[str | None, str]:
        calls.append(1)
        reasoner.model_name = "m-2024-01" if len(calls) <= 40 else "m-2024-06"
        return recalls(prompt, seed)

    reasoner.trace_for = switching
    try:
        findings = audit(reasoner, tmp_path, suspect, heldout, ["trace_consistency_token", "thinking_tokens"])
    finally:
        reasoner.model_name = "m"
    record = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert record["outcome"]["status"] == "served_model_changed" and findings["verdict"] == "INCONCLUSIVE"
    assert record["outcome"]["metrics"]["set_test"]["status"] == "significant"  # the model did recall the suspect set
    assert "model=m-2024-01, model=m-2024-06" in record["outcome"]["summary"]


def test_a_bad_signal_parameter_in_a_policy_names_the_key(tmp_path):
    from verifier.policy.schema import load_policy

    policy = {
        "name": "p",
        "version": 1,
        "routes": [
            {
                "route": "dataset_inference",
                "grants": ["SUPPORTED"],
                "params": {"signals": ["blackspectrum"], "signal_params": {"blackspectrum": {"k": 500}}},
            }
        ],
    }
    path = tmp_path / "p.yaml"
    import yaml

    path.write_text(yaml.safe_dump(policy))
    with pytest.raises(VerifierError, match="k: Input should be less than or equal to 50"):
        load_policy(path)
    policy["routes"][0]["params"] = {"signals": ["loss"], "signal_params": {"blackspectrum": {"k": 5}}}
    path.write_text(yaml.safe_dump(policy))
    with pytest.raises(VerifierError, match="signal_params for blackspectrum, which the signals list does not name"):
        load_policy(path)


def test_trace_compression_reads_familiar_text_as_more_compressible(
    reasoner, wiki, tiny_model_dir, tmp_path, monkeypatch
):
    """Compression under a scoring LM (the tiny test GPT-2, trained on WikiMIA text): a trace in
    the words it was trained on costs fewer nats a token than one of words it never saw, so it
    scores higher (more member-like); the scoring LM's weights digest is recorded."""
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    texts, _ = wiki
    plain = {t[:40] for t in texts[:4]}
    familiar = " ".join(texts[20].split()[:30])
    unseen = (
        "Perhaps the quixotic harbour bishop juggled zephyr timetables; maybe cricket, volcanic ash, or the obsidian "
        "marmalade of the northern ridge"
    )
    reasoner.trace_for = lambda prompt, seed: (familiar if any(p in prompt for p in plain) else unseen, "x")
    table = scored(
        reasoner, texts[:8], ["trace_compression"], params={"trace_compression": {"scoring_lm": str(tiny_model_dir)}}
    )
    values = table.signal("trace_compression")
    assert np.isfinite(values).all() and values[:4].min() > values[4:].max()
    assert len(table.metadata["signal_models"][f"scoring LM {tiny_model_dir.name}"]) == 64


# --- the real model ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_prompted_to_reason_gives_traces_every_attack_reads(
    smollm2_server, smollm2, wiki, tmp_path, monkeypatch
):
    """SmolLM2 does not reason natively: prompted, it writes a reply that is read as its trace.
    Every trace attack (compression under the bundled SmolLM2 as scoring LM) scores it."""
    import verifier.scoring.table

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    monkeypatch.setitem(
        verifier.scoring.table._LMS, "smollm2-135m", smollm2
    )  # the session's loaded model, not a second copy
    texts, _ = wiki
    small = {"traces": 2, "max_tokens": 32}
    params = {name: dict(small) for name in TRACE_SIGNALS + ["trace_compression"]}
    params["blackspectrum"] |= {"k": 5, "gamma": 5, "anchor_traces": 1}
    params["trace_judge"] |= {"judge_max_tokens": 8}
    target = load_target(smollm2_server.spec)
    table = score_documents(
        Documents(texts[:2], None, "t"),
        target,
        signal_names=TRACE_SIGNALS + ["trace_compression"],
        cache=ScoreCache(tmp_path / "cache"),
        signal_params=params,
    )
    known = (
        "empty trace",
        "trace not in English",
        "no trace",
        "fewer than two usable",
        "judge gave no rating",
        "refusal",
        "the recall and synthetic anchor traces do not differ",
    )
    for name in TRACE_SIGNALS + ["trace_compression"]:
        reasons = table.frame.get(FAILURE_PREFIX + name)
        assert reasons is None or all(r.startswith(known) for r in reasons.dropna()), (name, reasons)
    assert np.isfinite(table.signal("trace_compression")).all() and np.isfinite(table.signal("thinking_tokens")).all()
    assert table.metadata["signal_counts"]["thinking_tokens"] == {"traces from the prompted reply": 4}
    assert table.metadata["signals"]["blackspectrum"]["encoder"] == "all-MiniLM-L6-v2"
    assert target.usage["requests_sent"] <= 2 * 2 + 10 + 2 * 2  # traces, anchors, judgements: each distinct query once
    assert len(BlackSpectrum().shared_queries()) == (20 + 20) * 3  # the defaults: k = gamma = 20, three traces each


# --- the command line --------------------------------------------------------------------------------


def test_score_and_evaluate_count_unscored_documents_and_measure_nothing_over_too_few(
    reasoner, wiki, tmp_path, monkeypatch
):
    """`verifier score --signal-param` on a model that gives no trace for some documents: the table
    names each reason; `evaluate` measures the scored ones and says how many were left out, and
    computes nothing when more than half of a class is unscored."""
    from typer.testing import CliRunner

    from verifier.cli import app

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    texts, labels = wiki
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": t, "label": int(y)}) + "\n" for t, y in zip(texts, labels)))
    inner = scripted_trace(knows(texts, labels))
    silent = {t[:40] for t in texts[:6]}  # three members, three non-members: no trace
    reasoner.trace_for = lambda prompt, seed: (
        (None, "Answer: it") if any(s in prompt for s in silent) else inner(prompt, seed)
    )
    runner = CliRunner()
    args = [
        "score",
        "--model",
        reasoner.spec("reasoner"),
        "--data",
        str(data),
        "--out",
        str(tmp_path / "t.parquet"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--signal",
        "blackspectrum",
        "--signal-param",
        "blackspectrum.k=5",
        "--signal-param",
        "blackspectrum.gamma=5",
    ]
    assert runner.invoke(app, args).exit_code == 0
    rows = {
        r["name"]: r for r in json.loads(runner.invoke(app, ["evaluate", str(tmp_path / "t.parquet"), "--json"]).stdout)
    }
    assert rows["blackspectrum"]["unscored"] == {"no trace (the reply holds only an answer)": 6}
    assert (
        rows["blackspectrum"]["n_members"] + rows["blackspectrum"]["n_nonmembers"] == 34
        and rows["blackspectrum"]["auc"] > 0.85
    )
    silent |= {t[:40] for t in texts[6:30]}
    args[args.index("--out") + 1] = str(tmp_path / "u.parquet")
    args[args.index("--cache-dir") + 1] = str(tmp_path / "cache2")
    assert runner.invoke(app, args).exit_code == 0
    shown = runner.invoke(app, ["evaluate", str(tmp_path / "u.parquet")]).stdout
    assert "not computed" in shown and "30 documents unscored" in shown and "too few scored to measure" in shown
    bad = runner.invoke(app, args[:-1] + ["blackspectrum.gamma"])
    assert bad.exit_code != 0 and "expected SIGNAL.KEY=VALUE" in bad.output and "Traceback" not in bad.output
    bad = runner.invoke(app, args + ["--signal-param", "samia.samples=3"])
    assert bad.exit_code != 0 and "name the signal with --signal too" in bad.output
