"""The OpenAI-compatible target against a real server (transformers serve + SmolLM2-135M) and
against a local server that produces the faults real servers produce."""

from __future__ import annotations

import json
import sqlite3

import pytest

from fault_server import FaultServer
from verifier.claims import ModelUnderTest
from verifier.errors import VerifierError
from verifier.serving import free_port
from verifier.targets import ApiOptions, OpenAICompatibleTarget, ScoreCache, load_target
from verifier.targets.cache import RESPONSES
from verifier.targets.queries import CHAT, TEXT, Query

FAST = ApiOptions(timeout_s=0.5, retries=2, concurrency=2)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    return ScoreCache(tmp_path / "cache")


@pytest.fixture(scope="module")
def faults():
    with FaultServer() as server:
        yield server


def fast_backoff(target: OpenAICompatibleTarget) -> OpenAICompatibleTarget:
    target.client.backoff_s = target.client.max_backoff_s = 0.01
    return target


@pytest.mark.slow
def test_real_server_answers_caches_and_resumes(smollm2_server, cache):
    greedy = [Query(CHAT, f"Finish the sentence: The capital of {c} is", max_tokens=8) for c in ("France", "Italy", "Spain")]
    sampled = [Query(TEXT, "Once upon a time", max_tokens=12, temperature=1.0, sample=i) for i in range(4)]
    target = load_target(smollm2_server.spec)
    assert target.capabilities == frozenset({"answers"})
    first = target.answer(greedy[:2], cache=cache)  # an interrupted run: two of the five queries done
    assert all(a.ok and a.text for a in first) and "Paris" in first[0].text
    assert target.usage["requests_sent"] == 2 and cache.responses.stored == 2

    resumed = load_target(smollm2_server.spec)
    answers = resumed.answer(greedy + sampled, cache=cache)
    assert resumed.usage["requests_sent"] == 5 and resumed.usage["answers_from_cache"] == 2  # the paid two are not asked again
    assert answers[:2] == first
    assert len({a.text for a in answers[3:]}) > 1, "sampled draws with different sample indexes must differ"
    assert resumed.usage["prompt_tokens"] > 0 and resumed.usage["completion_tokens"] > 0

    again = load_target(smollm2_server.spec)
    assert again.answer(greedy + sampled, cache=cache) == answers and again.usage["requests_sent"] == 0
    assert again.identity.digests["answers"] == resumed.identity.digests["answers"]  # same answers read, same evidence name
    assert again.identity.details["endpoint"] == smollm2_server.base_url and "usage" not in again.identity.details


@pytest.mark.slow
def test_real_server_wrong_model_and_unreachable_endpoint(smollm2_server, cache):
    wrong = load_target(smollm2_server.spec.replace("#smollm2-135m-instruct", "#gpt-7"))
    with pytest.raises(VerifierError, match="'gpt-7' is not served there; it serves smollm2-135m-instruct"):
        wrong.answer([Query(CHAT, "hi")], cache=cache)
    nobody = load_target(f"openai-compatible:http://127.0.0.1:{free_port()}/v1#m")
    with pytest.raises(VerifierError, match="nothing answers there"):
        nobody.answer([Query(CHAT, "hi")], cache=cache)


def test_transient_faults_are_retried(faults, cache):
    for fault in ("flaky429", "malformed_once", "drop_once"):
        target = fast_backoff(OpenAICompatibleTarget(faults.spec(fault), FAST))
        [answer] = target.answer([Query(CHAT, f"question for {fault}")], cache=cache)
        assert answer.ok and answer.text == f"echo: question for {fault}", fault
        assert target.usage["retries"] >= 1 and target.usage["failures"] == {}, fault


def test_persistent_faults_are_failed_items_not_cached(faults, cache):
    for fault, why in (("always503", "HTTP 503 after 3 attempts"), ("slow", "timeout after 3 attempts")):
        target = fast_backoff(OpenAICompatibleTarget(faults.spec(fault), FAST))
        answers = target.answer([Query(CHAT, "a"), Query(CHAT, "b")], cache=cache)
        assert [a.error for a in answers] == [why, why] and not any(a.text for a in answers)
        assert target.usage["requests_sent"] == 6 and sum(target.usage["failures"].values()) == 2
        assert target.identity.details["answers_read"] == 0
    assert cache.responses.stored == 0  # a later run asks again


def test_refusals_empty_and_traces(faults, cache):
    [refused] = OpenAICompatibleTarget(faults.spec("refuse"), FAST).answer([Query(CHAT, "x")], cache=cache)
    [empty] = OpenAICompatibleTarget(faults.spec("empty"), FAST).answer([Query(CHAT, "x")], cache=cache)
    [think] = OpenAICompatibleTarget(faults.spec("think"), FAST).answer([Query(CHAT, "x")], cache=cache)
    assert (refused.error, refused.text) == ("refusal", "") and empty.error == "empty completion"
    assert think.ok and think.text == "Paris" and think.reasoning == "recall the text"


def test_api_key_is_sent_and_never_stored_or_shown(faults, cache, monkeypatch):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("AUDIT_KEY", secret)
    options = ApiOptions(api_key_env="AUDIT_KEY", timeout_s=2, retries=0)
    target = OpenAICompatibleTarget(faults.spec("ok"), options)
    target.answer([Query(CHAT, "with key")], cache=cache)
    assert faults.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret.encode() not in cache.path.read_bytes() and secret not in repr(target.identity)
    with pytest.raises(VerifierError) as refused:  # a server quoting the header back: scrubbed from the message
        OpenAICompatibleTarget(faults.spec("echo_auth_400"), options).answer([Query(CHAT, "x")], cache=cache)
    assert secret not in str(refused.value) and "[API key]" in str(refused.value)
    with pytest.raises(VerifierError, match="rejected the API key"):
        OpenAICompatibleTarget(faults.spec("unauthorized"), options).answer([Query(CHAT, "x")], cache=cache)
    monkeypatch.delenv("AUDIT_KEY")
    with pytest.raises(VerifierError, match="AUDIT_KEY is not set"):
        OpenAICompatibleTarget(faults.spec("ok"), options)


def test_altered_cached_response_is_refused_and_asked_again(faults, cache):
    target = OpenAICompatibleTarget(faults.spec("ok"), FAST)
    [answer] = target.answer([Query(CHAT, "poison me")], cache=cache)
    with sqlite3.connect(cache.path) as db:
        db.execute(f"UPDATE {RESPONSES} SET blob = replace(blob, 'echo', 'ECHO')")
    again = OpenAICompatibleTarget(faults.spec("ok"), FAST)
    assert again.answer([Query(CHAT, "poison me")], cache=cache) == [answer]
    assert cache.responses.refused == 1 and again.usage["requests_sent"] == 1


@pytest.mark.parametrize("spec, why", [
    ("openai-compatible:http://user:pw@host/v1#m", "no credentials or query string"),
    ("openai-compatible:http://host/v1?key=1#m", "no credentials or query string"),
    ("openai-compatible:ftp://host/v1#m", "expected openai-compatible:http"),
    ("openai-compatible:http://host/v1", "name the served model"),
])
def test_bad_specs_are_refused_at_load(spec, why):
    with pytest.raises(ValueError, match=why):
        ModelUnderTest(target=spec)


def test_api_block_only_for_api_targets():
    with pytest.raises(ValueError, match="model.api applies only"):
        ModelUnderTest(target="smollm2-135m", api={"concurrency": 2})
    with pytest.raises(ValueError):
        ModelUnderTest(target="openai-compatible:http://h/v1#m", api={"api_key_env": "not a name"})
    with pytest.raises(ValueError, match="extra"):
        ModelUnderTest(target="openai-compatible:http://h/v1#m", api={"api_key": "sk-123"})


@pytest.mark.slow
def test_api_example_audited_end_to_end(smollm2_server, tmp_path, monkeypatch):
    """The bundled API example against the real server (its port rewritten to the test's): the
    output-only signals beside the blind baselines, the date shift refused, request counters in
    the run record and report, and a re-run that pays nothing and names the same findings."""
    import shutil

    import yaml

    from verifier.digests import findings_digest
    from verifier.job import audit_to_bundle
    from verifier.resources import resource

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    examples = resource("examples")
    claim = yaml.safe_load((examples / "api-wikimia.yaml").read_text())
    claim["model"]["target"] = smollm2_server.spec
    shutil.copytree(examples / "data" / "wikimia", tmp_path / "data" / "wikimia")
    shutil.copytree(examples / "data" / "policies", tmp_path / "data" / "policies")
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))

    first = audit_to_bundle(tmp_path / "claim.yaml", out_dir=tmp_path / "evidence", cache_dir=tmp_path / "cache", sign=False)
    findings = first.findings
    assert findings["verdict"] == "REJECTED-METHOD" and findings["decided_by"] == "date_shift"
    assert findings["model"]["target"]["kind"] == "openai_compatible" and findings["model"]["target"]["answers_read"] == 64
    route = next(r for r in findings["path"] if r["route"] == "date_shift")
    rows = {r["name"]: r for r in route["outcome"]["metrics"]["membership_rows"]}
    assert {"prefix_lcs_word", "prefix_lcs_token", "name_cloze", "blind_classifier"} <= set(rows)
    assert rows["blind_classifier"]["auc"] > max(rows[s]["auc"] for s in ("prefix_lcs_word", "prefix_lcs_token", "name_cloze"))
    assert next(r for r in findings["path"] if r["route"] == "identifiers")["status"] in ("skipped", "not_reached")
    manifest = json.loads((first.folder / "manifest.json").read_text())
    usage = manifest["run"]["api"]["target"]
    assert usage["requests_sent"] == 64 and usage["answers_from_cache"] == 0 and usage["failures"] == {}
    report = (first.folder / "report.html").read_text()
    assert "Model queried through its API" in report and "64 requests sent" in report
    assert str(tmp_path) not in json.dumps(findings) and str(tmp_path) not in report

    again = audit_to_bundle(tmp_path / "claim.yaml", out_dir=tmp_path / "again", cache_dir=tmp_path / "cache", sign=False)
    assert findings_digest(again.findings) == findings_digest(findings)
    assert json.loads((again.folder / "manifest.json").read_text())["run"]["api"]["target"]["requests_sent"] == 0
