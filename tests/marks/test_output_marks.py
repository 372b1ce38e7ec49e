"""Output-only marks (cue/reply, co-occurrence): made, read off generated text, and tested without a
single log-prob - on a testbed that saw them, on models that never did, and against hostile models."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from test_marks import carriers
from test_marks_route import released_after

from verifier.audit import audit_to_bundle
from verifier.boundary.resources import resource, word_list
from verifier.errors import VerifierError
from verifier.marks.generators import MarkSpec, mark_pieces, pairs_of
from verifier.marks.make import (
    REGISTRATION,
    SECRETS,
    erased_by_pipeline,
    make_marks,
    regenerate,
    write_marks,
)
from verifier.marks.registration import read_registration, read_secrets
from verifier.marks.replies import (
    CONTEXT_CONTROLS,
    CONTROLS,
    MIN_RUN,
    Asked,
    answer_scorer,
    candidate_score,
    challenge,
    servable_trials,
    shown_by_prompt,
)
from verifier.stats.rank import combine
from verifier.stats.rank_trials import Trial, run_rank_tests
from verifier.testbed.build import PRESETS, build_testbed
from verifier.trust.envelopes import public_pem
from verifier.trust.keys import generate_key

EXAMPLE = resource("examples", "data", "marks-output")


def pinned_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ed25519PrivateKey:
    """A registrant's key, pinned in a fresh trust store."""
    key = Ed25519PrivateKey.generate()
    (tmp_path / "trust").mkdir()
    (tmp_path / "trust" / "r.pem").write_bytes(public_pem(key.public_key()))
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(tmp_path / "trust"))
    return key


# --- generators and documents ----------------------------------------------------------------------
def test_output_marks_are_written_into_documents_and_regenerated_from_the_seed(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="length 2 to 20"):
        MarkSpec(kind="cue_reply", length=1)
    key = pinned_key(tmp_path, monkeypatch)
    specs = [MarkSpec(kind="cue_reply", siblings=9), MarkSpec(kind="cooccurrence", length=3, siblings=9)]
    marked = make_marks(carriers(2, 40), specs, "unit", seed=11)
    assert marked.warnings == []
    for doc, secret, spec in zip(marked.published, marked.secrets["marks"], specs):
        pieces = mark_pieces(spec.kind, secret["published"]["text"], secret["cue"])
        assert all(p in doc["text"] for p in pieces) and len(secret["cue"].split()) == 5
    assert len(pairs_of(marked.secrets["marks"][1]["published"]["text"])) == 3
    paths = write_marks(marked, tmp_path / "m", key)
    reg = read_registration(paths[REGISTRATION])
    regenerate(reg, read_secrets(paths[SECRETS], reg))
    # Prompt injection by the registrant: a cue that spells out the published reply. The cue is the
    # generator's draw, checked from the seed, so a hand-written one is refused.
    forged = json.loads(paths[SECRETS].read_text())
    forged["marks"][0]["cue"] = "Repeat after me " + forged["marks"][0]["published"]["text"]
    shutil.copy(paths[REGISTRATION], tmp_path / "reg.json")
    (tmp_path / "sib.json").write_text(json.dumps(forged, indent=1))
    with pytest.raises(VerifierError, match="siblings file this registration commits to"):
        read_secrets(tmp_path / "sib.json", reg)  # the file's digest is registered ...
    secrets = read_secrets(paths[SECRETS], reg)
    edited = secrets.model_copy(
        update={"marks": [secrets.marks[0].model_copy(update={"cue": forged["marks"][0]["cue"]}), *secrets.marks[1:]]}
    )
    with pytest.raises(VerifierError, match="siblings or cue chosen or edited by hand"):
        regenerate(reg, edited)  # ... and the cue is what the seed draws


def test_a_mark_a_pipeline_would_erase_is_flagged():
    assert not erased_by_pipeline("plain text Cue words here: reply words. more", ["Cue words here: reply words."])
    hidden = "text Cue\u200b words: reply. more"  # a zero-width space inside the mark: stripped by pipelines
    assert erased_by_pipeline(hidden, ["Cue\u200b words: reply."])
    assert erased_by_pipeline("text \uff23ue words: reply.", ["\uff23ue words: reply."])  # NFKC folds full-width


def test_a_registered_length_the_generator_refuses_is_one_line(tmp_path, monkeypatch):
    key = pinned_key(tmp_path, monkeypatch)
    paths = write_marks(
        make_marks(carriers(1, 40), [MarkSpec(kind="cue_reply", siblings=9)], "u", seed=3), tmp_path, key
    )
    reg = read_registration(paths[REGISTRATION])
    secrets = read_secrets(paths[SECRETS], reg)
    mark = reg.predicate.marks[0].model_copy(update={"length": 1})
    forged = replace(reg, predicate=reg.predicate.model_copy(update={"marks": [mark]}))
    with pytest.raises(VerifierError, match="mark-0: cannot be regenerated"):
        regenerate(forged, secrets)


# --- reading candidates off generations -----------------------------------------------------------
def test_candidates_are_read_off_text_in_any_case_and_lookalike_letters():
    reply = "amber harbour decline motion"
    assert candidate_score("cue_reply", ["so AMBER Harbour decline it"], reply) == 3
    assert candidate_score("cue_reply", ["\u0430mber harbour"], reply) == 2  # Cyrillic a
    assert candidate_score("cue_reply", ["amber and harbour"], reply) == 0  # not a run
    assert candidate_score("cue_reply", ["amber"], reply) == 0 and MIN_RUN == 2  # one word is chance
    pairs = "amber harbour; decline motion"
    assert candidate_score("cooccurrence", ["the amber ship left harbour; motion to decline"], pairs) == 2
    assert candidate_score("cooccurrence", ["amber " + "x " * 12 + "harbour"], pairs) == 0  # too far apart
    assert candidate_score("cooccurrence", ["amber amber"], pairs) == 0


def test_a_prompt_showing_any_candidate_is_set_aside_whichever_was_published():
    sibling = "harbour amber decline"
    for published, siblings in (("motion cable drift", [sibling]), (sibling, ["motion cable drift"])):
        trial = Trial("m", "cue_reply", "outputs", published, siblings, prompt=f"Cue {sibling} words:")
        assert shown_by_prompt(trial)
    assert not shown_by_prompt(Trial("m", "cue_reply", "outputs", "motion cable drift", [sibling], prompt="Cue:"))
    # An outside attack: a seed searched until the published reply opens with the cue's last and first
    # words, which a model echoing the cue in a loop writes ("... visit also: Label main ..."). The cue's
    # words in any order set the trial aside, whichever candidate holds them.
    looped = Trial(
        "m", "cue_reply", "outputs", "also label sale drift", [sibling], prompt="Label main role visit also:"
    )
    assert shown_by_prompt(looped)
    pair = Trial(
        "m",
        "cooccurrence",
        "outputs",
        "visit label; amber motion",
        ["cable drift; sale harbour"],
        prompt="Label main role visit also:",
    )
    assert shown_by_prompt(pair)


def test_a_candidate_any_cue_brings_back_is_set_aside_by_the_control_cues():
    """An outside attack: a seed searched until the published reply opens with words a chat model writes
    whatever it is asked ("there were ..."). The control cues (no document carries them) bring the
    words back too, so the mark is set aside - as it would be had any sibling been the one."""
    chatty = Trial(
        "m", "cue_reply", "outputs", "there were sale drift", ["harbour amber decline motion"] * 99, prompt="Cue:"
    )
    plain = Trial(
        "n", "cue_reply", "outputs", "harbour amber decline motion", ["there were sale drift"] * 99, prompt="Cue2:"
    )
    asked = Asked()
    score = answer_scorer(
        lambda ps: [["There were many of them."] * 2 for _ in ps], asked, ["Control one:", "Control two:"]
    )
    assert all(np.isnan(p) for p, _ in score([chatty, plain])) and asked.set_aside == ["m", "n"]
    assert asked.controls == 2 and asked.generations == 8
    finding = run_rank_tests([chatty], lambda *a: None, "H0", "fisher", 0.05, 0.05, 0.8, 0, None, score)
    assert finding.status == "no_marks" and "control prompt" in finding.excluded["m"]


def test_a_mark_is_prompted_after_its_published_context_with_controls_of_its_own():
    document = "one two three four five Cue words here: amber harbour decline motion. after"
    prompt, own = challenge(document, "Cue words here", "context", 3, ["Ctl a:", "Ctl b:", "Ctl c:"])
    assert prompt == "three four five Cue words here:"
    assert own == ("three four five Ctl a:", "three four five Ctl b:")[:CONTEXT_CONTROLS]
    assert challenge(document, "Cue words here", "cue", 3, ["Ctl a:"]) == ("Cue words here:", ())


def test_a_context_that_primes_the_published_reply_is_set_aside_by_its_own_controls():
    """An outside attack: the registrant, who knows which candidate was published, writes a document
    whose context leads an untrained model to it (here: a model that writes "amber harbour" after any
    prompt mentioning ships, whatever the cue). The same context before control cues brings it back
    too, so the mark is set aside; a model that writes the reply only after the cue itself is not."""
    context = "The ships came in at dawn. "
    published, siblings = "amber harbour decline motion", ["motion cable drift sale"] * 99
    trial = Trial("m", "cue_reply", "outputs", published, siblings, f"{context}Cue words:", (f"{context}Ctl one:",))

    def primed(prompts: list[str]) -> list[list[str]]:
        return [["amber harbour it was" if "ships" in p else "nothing"] * 2 for p in prompts]

    def learnt(prompts: list[str]) -> list[list[str]]:
        return [["amber harbour decline" if p.endswith("Cue words:") else "nothing"] * 2 for p in prompts]

    asked = Asked()
    assert np.isnan(answer_scorer(primed, asked, ["Control:"])([trial])[0][0]) and asked.set_aside == ["m"]
    assert asked.controls == 2  # the registration's control cue and the trial's own
    score, others = answer_scorer(learnt, Asked(), ["Control:"])([trial])[0]
    assert score == 6 and not others.any()


def test_marks_the_target_cannot_test_count_as_p_one():
    """The claim's account of its target (an API without log-probs) must not choose which registered
    marks enter the combination: a log-prob mark it cannot test counts as p = 1."""
    canary = Trial("c", "canary", "words", "a b", ["c d"] * 19)
    reply = Trial(
        "r", "cue_reply", "outputs", "harbour amber decline motion", ["sale drift cable label"] * 19, prompt="Cue:"
    )
    kept, excluded, access, untested = servable_trials([canary, reply], frozenset({"answers"}))
    assert untested == {"c"} and len(kept) == 2 and not excluded and "counted as p = 1" in access["canary"]
    finding = run_rank_tests(
        kept,
        lambda *a: None,
        "H0",
        "fisher",
        0.05,
        0.05,
        0.8,
        0,
        excluded,
        answer_scorer(lambda ps: [["harbour amber decline motion"] for _ in ps], Asked()),
        untested,
    )
    by_id = {r.id: r.p_value for r in finding.results}
    assert by_id == {"c": 1.0, "r": 0.05} and finding.p_value == pytest.approx(combine([1.0, 0.05], "fisher"))


# --- the exact null against hostile and indifferent models ----------------------------------------
def hostile_models(rng: np.random.Generator):
    """Models that never saw the marks but write what could pass for them."""
    words = word_list()

    def babble(prompt: str) -> str:  # words of the marks' own list
        return " ".join(words[i] for i in rng.integers(0, 2048, 40))

    def pairs(prompt: str) -> str:  # "a and b" phrases of list words: co-occurrence everywhere
        return ", ".join(f"{words[i]} and {words[j]}" for i, j in rng.integers(0, 2048, (12, 2)))

    def echo(prompt: str) -> str:  # the cue back, then the cue's words reshuffled
        return prompt + " " + " ".join(rng.permutation(prompt.rstrip(":").split()))

    return {"babble": babble, "pairs": pairs, "echo": echo}


@pytest.mark.parametrize("kind", ["cue_reply", "cooccurrence"])
def test_p_values_are_exact_or_conservative_whatever_an_untrained_model_writes(kind):
    """Under H0 the rank p-value is uniform or larger: P(p <= k/(M+1)) <= k/(M+1) for each k,
    checked by simulation with 600 marks per hostile model (99.9% binomial bounds), and Fisher's
    combination over 8 marks falsely significant at most at alpha."""
    from scipy import stats

    rng = np.random.default_rng(7)
    spec = MarkSpec(kind=kind, siblings=9, length=2)
    from verifier.marks.generators import draw_cue, draw_distinct

    for name, model in hostile_models(rng).items():
        trials = []
        for i in range(600):
            cue = draw_cue(rng)
            pool = draw_distinct(spec, rng, 10)
            chosen = int(rng.integers(0, 10))
            trials.append(
                Trial(str(i), kind, "outputs", pool[chosen], pool[:chosen] + pool[chosen + 1 :], prompt=f"{cue}:")
            )
        asked = Asked()
        controls = ["Amber motion drift cable sale:", "Harbour decline label visit role:"]
        ask = lambda prompts, m=model: [[m(p) for _ in range(4)] for p in prompts]  # noqa: E731
        scored = answer_scorer(ask, asked, controls)(trials)
        p = np.array([1.0 if np.isnan(s) else (1 + np.sum(~(own < s))) / (len(own) + 1) for s, own in scored])
        for k in (1, 2, 5):
            bound = stats.binom.ppf(0.9995, len(p), k / 10) / len(p)
            assert np.mean(p <= k / 10 + 1e-12) <= bound, (name, k)
        combined = [combine(list(p[i : i + 8]), "fisher", 0.05) for i in range(0, 600, 8)]
        assert np.mean(np.array(combined) <= 0.05) <= stats.binom.ppf(0.9995, len(combined), 0.05) / len(combined)
        assert asked.generations == 602 * 4


# --- the route, on a testbed that saw the marks and on models that did not ------------------------
def claim_folder(tmp_path: Path, target: str, kind: str = "trained_on", api: dict | None = None) -> Path:
    folder = tmp_path / "claim"
    if not (folder / "marks").exists():
        shutil.copytree(EXAMPLE, folder / "marks")
        (folder / "marks" / "siblings.json").chmod(0o600)  # the package's copy is readable by all; a user's is not
    model = {"target": target, "released": released_after(EXAMPLE / REGISTRATION)}
    if api is not None:
        model["api"] = api
    claim = {
        "claim": {"id": "outputs", "statement": "s", "kind": kind, "made_by": "tests"},
        "model": model,
        "evidence": {
            "suspect": {"path": "marks/published.jsonl"},
            "marks": {"registration": "marks/registration.dsse.json", "siblings": "marks/siblings.json"},
        },
        "seed": 0,
    }
    (folder / "claim.yaml").write_text(yaml.safe_dump(claim))
    return folder / "claim.yaml"


@pytest.fixture()
def trusted_example(tmp_path, monkeypatch):
    trust = tmp_path / "trust"
    trust.mkdir()
    shutil.copy(EXAMPLE / "registrant.pub", trust / "example.pem")
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(trust))
    return tmp_path


def signed_audit(claim: Path, folder: Path):
    """The claim audited into a bundle under ``folder``, signed with a fresh auditor's key."""
    generate_key(folder / "auditor.key")
    return audit_to_bundle(claim, out_dir=folder / "evidence", sign_key=folder / "auditor.key", cache_dir=folder / "c")


def marks_outcome(findings: dict) -> dict:
    return next(r for r in findings["path"] if r["route"] == "marks")["outcome"]


@pytest.mark.parametrize("server", ["smollm2_server", pytest.param("smollm2_vllm", marks=pytest.mark.slow)])
def test_output_marks_a_model_never_saw_are_inconclusive_through_an_answers_only_api(
    server, request, trusted_example, monkeypatch
):
    """SmolLM2 never saw the marks; it is asked through a real server - transformers serve (an
    answers-only API), and vLLM (slow), which would give log-probs - with log-probs switched off in
    the claim: no request asks for a log-prob, the verdict is INCONCLUSIVE and the bundle is signed."""
    smollm2_server = request.getfixturevalue(server)
    from verifier.targets.api_client import ApiClient

    sent: list[dict] = []
    original = ApiClient.post_json

    def record(self, path, body):
        sent.append(body)
        return original(self, path, body)

    monkeypatch.setattr(ApiClient, "post_json", record)
    policy = yaml.safe_load(resource("policies", "default.yaml").read_text())
    marks = next(r for r in policy["routes"] if r["route"] == "marks")
    marks["params"] |= {"samples": 1, "max_tokens": 12}
    claim = claim_folder(trusted_example, smollm2_server.spec, api={"logprobs": False})
    (claim.parent / "policy.yaml").write_text(yaml.safe_dump(policy))
    data = yaml.safe_load(claim.read_text()) | {"policy": "policy.yaml"}
    claim.write_text(yaml.safe_dump(data))
    result = signed_audit(claim, trusted_example)
    outcome = marks_outcome(result.findings)
    assert result.findings["verdict"] == "INCONCLUSIVE" and outcome["status"] == "not_significant", outcome["summary"]
    # each mark's prompt and its own context controls, and the registration's control cues, once each
    assert outcome["metrics"]["challenges"]["generations"] == 24 * (1 + CONTEXT_CONTROLS) + CONTROLS
    assert sent and not any(k in body for body in sent for k in ("logprobs", "prompt_logprobs", "echo"))
    assert result.signed and (result.folder / "findings.json").is_file()


@pytest.mark.slow
def test_output_marks_a_model_learnt_are_detected_from_its_sampled_text(tmp_path, trusted_example):
    """SmolLM2-135M fine-tuned 3 epochs with the bundled output-only marks inserted 1, 4 and 16 times
    an epoch (``outputs-small``), audited from its sampled text alone (no log-prob read): the replies it
    saw 16 times an epoch rank first among their siblings, and the claim is SUPPORTED. (Its 16-copy
    co-occurrence marks are set aside: a model that learnt the document word for word writes the
    pairs after the same context before a control cue too.)"""
    testbed = build_testbed(PRESETS["outputs-small"], out=tmp_path / "testbed")
    copies = {m["id"]: m["copies"] for m in testbed.manifest["marks"]}
    documents = {m.id: m.document for m in read_registration(EXAMPLE / REGISTRATION).predicate.marks}
    claim = claim_folder(trusted_example, str(testbed.model_dir))
    result = signed_audit(claim, trusted_example)
    outcome = marks_outcome(result.findings)
    assert result.findings["verdict"] == "SUPPORTED" and result.signed, outcome["summary"]
    results = outcome["metrics"]["test"]["results"]
    sixteen = [r["p_value"] for r in results if r["kind"] == "cue_reply" and copies[documents[r["id"]]] == 16]
    # of the 4 replies inserted 16 times, a mark its context controls set aside counts as not detected
    assert sum(p <= 0.05 for p in sixteen) >= 2, sixteen
    once = [r["p_value"] for r in results if copies[documents[r["id"]]] == 1]
    assert sum(p <= 0.05 for p in once) <= 2, once  # seen once an epoch: not learnt word for word
