"""The OpenAI-compatible target against a real server (transformers serve + SmolLM2-135M) and
against a local server that produces the faults real servers produce."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from conftest import ROOT, read_jsonl
from fault_server import FaultServer

from verifier.boundary.peers import PeerAccess
from verifier.claims import ModelUnderTest
from verifier.errors import VerifierError
from verifier.targets import ApiOptions, OpenAICompatibleTarget, ScoreCache, load_target
from verifier.targets.cache import RESPONSES
from verifier.targets.queries import CHAT, TEXT, Query
from verifier.targets.serving import free_port

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
    greedy = [
        Query(CHAT, f"Finish the sentence: The capital of {c} is", max_tokens=8) for c in ("France", "Italy", "Spain")
    ]
    sampled = [Query(TEXT, "Once upon a time", max_tokens=12, temperature=1.0, sample=i) for i in range(4)]
    target = load_target(smollm2_server.spec)
    assert target.capabilities == frozenset({"answers"})
    first = target.answer(greedy[:2], cache=cache)  # an interrupted run: two of the five queries done
    assert all(a.ok and a.text for a in first) and "Paris" in first[0].text
    assert target.usage["requests_sent"] == 2 and cache.responses.stored == 2

    resumed = load_target(smollm2_server.spec)
    answers = resumed.answer(greedy + sampled, cache=cache)
    assert (
        resumed.usage["requests_sent"] == 5 and resumed.usage["answers_from_cache"] == 2
    )  # the paid two are not asked again
    assert answers[:2] == first
    assert len({a.text for a in answers[3:]}) > 1, "sampled draws with different sample indexes must differ"
    assert resumed.usage["prompt_tokens"] > 0 and resumed.usage["completion_tokens"] > 0

    again = load_target(smollm2_server.spec)
    assert again.answer(greedy + sampled, cache=cache) == answers and again.usage["requests_sent"] == 0
    assert (
        again.identity.digests["answers"] == resumed.identity.digests["answers"]
    )  # same answers read, same evidence name
    assert again.identity.details["endpoint"] == smollm2_server.base_url and "usage" not in again.identity.details


@pytest.mark.slow
def test_real_server_wrong_model_and_unreachable_endpoint(smollm2_server, cache):
    assert (
        smollm2_server.model.startswith("smollm2-135m-instruct-")
        and len(smollm2_server.model) == len("smollm2-135m-instruct-") + 12
    )
    wrong = load_target(smollm2_server.spec.rsplit("#", 1)[0] + "#gpt-7")
    with pytest.raises(VerifierError, match=f"'gpt-7' is not served there; it serves {smollm2_server.model}"):
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
    options = ApiOptions(timeout_s=2, retries=0)
    keyed = {"access": PeerAccess(api_key_env="AUDIT_KEY"), "key_env": "AUDIT_KEY"}
    target = OpenAICompatibleTarget(faults.spec("ok"), options, **keyed)
    target.answer([Query(CHAT, "with key")], cache=cache)
    assert faults.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret.encode() not in cache.path.read_bytes() and secret not in repr(target.identity)
    # A server quoting the header back: scrubbed from the recorded failure, before it is shortened.
    [echoed] = OpenAICompatibleTarget(faults.spec("echo_auth_400"), options, **keyed).answer(
        [Query(CHAT, "x")], cache=cache
    )
    assert secret not in echoed.error and "[API key]" in echoed.error
    with pytest.raises(VerifierError, match="rejected the API key"):
        OpenAICompatibleTarget(faults.spec("unauthorized"), options, **keyed).answer([Query(CHAT, "x")], cache=cache)
    monkeypatch.delenv("AUDIT_KEY")
    with pytest.raises(VerifierError, match="AUDIT_KEY is not set"):
        OpenAICompatibleTarget(faults.spec("ok"), options, **keyed)


def test_altered_cached_response_is_refused_and_asked_again(faults, cache):
    target = OpenAICompatibleTarget(faults.spec("ok"), FAST)
    [answer] = target.answer([Query(CHAT, "poison me")], cache=cache)
    with sqlite3.connect(cache.path) as db:
        db.execute(f"UPDATE {RESPONSES} SET blob = replace(blob, 'echo', 'ECHO')")
    again = OpenAICompatibleTarget(faults.spec("ok"), FAST)
    assert again.answer([Query(CHAT, "poison me")], cache=cache) == [answer]
    assert cache.responses.refused == 1 and again.usage["requests_sent"] == 1


@pytest.mark.parametrize(
    "spec, why",
    [
        ("openai-compatible:http://user:pw@host/v1#m", "no credentials, parameters or query string"),
        ("openai-compatible:http://host/v1?key=1#m", "no credentials, parameters or query string"),
        (
            "openai-compatible:http://host/v1;api_key=sk-1#m",
            "no credentials, parameters or query string",
        ),  # an outside attack's find
        ("openai-compatible:http://host/v1%3Bkey%3Dsk-1#m", "no credentials, parameters or query string"),
        ("openai-compatible:ftp://host/v1#m", "expected openai-compatible:http"),
        ("openai-compatible:http://host/v1", "name the served model"),
    ],
)
def test_bad_specs_are_refused_at_load(spec, why):
    with pytest.raises(ValueError, match=why):
        ModelUnderTest(target=spec)


def test_api_block_only_for_api_targets():
    with pytest.raises(ValueError, match="model.api applies only"):
        ModelUnderTest(target="smollm2-135m", api={"concurrency": 2})
    # The claimant writes the claim; which of the auditor's secrets goes to the claim's server is not its to say.
    with pytest.raises(ValueError, match="cannot choose which of the auditor's secrets"):
        ModelUnderTest(target="openai-compatible:http://h/v1#m", api={"api_key_env": "HF_TOKEN"})
    with pytest.raises(VerifierError, match="environment variable"):
        PeerAccess(api_key_env="not a name")
    with pytest.raises(ValueError, match="extra"):
        ModelUnderTest(target="openai-compatible:http://h/v1#m", api={"api_key": "sk-123"})


@pytest.mark.slow
def test_api_example_audited_end_to_end(smollm2_server, tmp_path, monkeypatch):
    """The bundled API example against the real server (its port rewritten to the test's): the
    output-only signals beside the blind baselines, the date shift refused, request counters in
    the run record and report, and a re-run that pays nothing and names the same findings."""
    import shutil

    import yaml

    from verifier.audit import audit_to_bundle
    from verifier.boundary.resources import resource
    from verifier.trust.digests import findings_digest

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    examples = resource("examples")
    claim = yaml.safe_load((examples / "api-wikimia.yaml").read_text())
    claim["model"]["target"] = smollm2_server.spec
    shutil.copytree(examples / "data" / "wikimia", tmp_path / "data" / "wikimia")
    shutil.copytree(examples / "data" / "policies", tmp_path / "data" / "policies")
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))

    first = audit_to_bundle(
        tmp_path / "claim.yaml", out_dir=tmp_path / "evidence", cache_dir=tmp_path / "cache", sign=False
    )
    findings = first.findings
    assert findings["verdict"] == "REJECTED-METHOD" and findings["decided_by"] == "date_shift"
    assert (
        findings["model"]["target"]["kind"] == "openai_compatible" and findings["model"]["target"]["answers_read"] == 48
    )
    route = next(r for r in findings["path"] if r["route"] == "date_shift")
    rows = {r["name"]: r for r in route["outcome"]["metrics"]["membership_rows"]}
    assert {"prefix_lcs_word", "prefix_lcs_token", "name_cloze", "blind_classifier"} <= set(rows)
    assert rows["blind_classifier"]["auc"] > max(
        rows[s]["auc"] for s in ("prefix_lcs_word", "prefix_lcs_token", "name_cloze")
    )
    # The identifiers route runs as on a local model (the probe, not the kind, says what the server
    # offers) and finds nothing to test in these texts: no verdict, and no request beyond the 48 answers.
    assert next(r for r in findings["path"] if r["route"] == "identifiers")["status"] in (
        "skipped",
        "not_reached",
        "ran",
    )
    manifest = json.loads((first.folder / "manifest.json").read_text())
    usage = manifest["run"]["api"]["target"]
    assert usage["requests_sent"] == 48 and usage["answers_from_cache"] == 0 and usage["failures"] == {}
    report = (first.folder / "report.html").read_text()
    assert "Model queried through its API" in report and "48 requests sent" in report
    assert str(tmp_path) not in json.dumps(findings) and str(tmp_path) not in report

    again = audit_to_bundle(
        tmp_path / "claim.yaml", out_dir=tmp_path / "again", cache_dir=tmp_path / "cache", sign=False
    )
    assert findings_digest(again.findings) == findings_digest(findings)
    assert json.loads((again.folder / "manifest.json").read_text())["run"]["api"]["target"]["requests_sent"] == 0


def test_a_request_refused_for_itself_is_one_failed_item(faults, cache):
    target = fast_backoff(OpenAICompatibleTarget(faults.spec("too_long"), FAST))
    answers = target.answer(
        [Query(CHAT, "LONG text"), Query(CHAT, "short")], cache=cache
    )  # a 400 first must not stop the run
    assert answers[0].error.startswith("HTTP 400: context length exceeded") and answers[1].ok
    assert (
        target.usage["failures"] == {"HTTP 400": 1} and target.usage["retries"] == 0
    )  # not retried: it would fail again
    with pytest.raises(VerifierError, match="no such path on the server"):
        OpenAICompatibleTarget(faults.spec("no_path"), FAST).answer([Query(CHAT, "x")], cache=cache)


def test_overloaded_52x_is_retried_and_retry_after_pauses_every_worker(faults, cache):
    target = fast_backoff(OpenAICompatibleTarget(faults.spec("busy520"), FAST))
    assert target.answer([Query(CHAT, "cloudflare")], cache=cache)[0].ok and target.usage["retries"] == 1
    pausing = fast_backoff(
        OpenAICompatibleTarget(faults.spec("pause"), ApiOptions(timeout_s=5, retries=2, concurrency=4))
    )
    answers = pausing.answer([Query(CHAT, f"q{i}") for i in range(6)], cache=cache)
    assert all(a.ok for a in answers)
    times = sorted(r["at"] for r in faults.requests if r["path"].startswith("/pause/"))
    assert (
        len(times) == 7 and times[-1] - times[0] >= 0.9
    )  # the told wait was kept (by the retried request and the rest)


def test_a_fatal_error_mid_batch_keeps_every_answer_already_paid_for(faults, cache):
    queries = (
        [Query(CHAT, f"paid {i}") for i in range(5)]
        + [Query(CHAT, "STOP")]
        + [Query(CHAT, f"later {i}") for i in range(5)]
    )
    target = OpenAICompatibleTarget(faults.spec("stop401"), ApiOptions(timeout_s=5, retries=0, concurrency=2))
    with pytest.raises(VerifierError, match="rejected the API key"):
        target.answer(queries, cache=cache)
    sent = target.usage["requests_sent"]
    assert cache.responses.stored == sent - 1 >= 5  # every answered request was cached, the refused one not
    resumed = OpenAICompatibleTarget(faults.spec("stop401"), ApiOptions(timeout_s=5, retries=0, concurrency=2))
    answers = resumed.answer([q for q in queries if q.content != "STOP"], cache=cache)
    assert all(a.ok for a in answers) and resumed.usage["answers_from_cache"] == sent - 1
    assert resumed.usage["requests_sent"] == 10 - (sent - 1)


@pytest.mark.parametrize(
    "text, refused",
    [
        ("I’m sorry, but I can’t help with that.", True),
        ("I can’t provide that text.", True),
        ("I apologize, but I cannot reproduce copyrighted text.", True),
        ("As an AI language model, I cannot", True),
        # two a README-only attacker got past the detector, turning "route failed" into SUPPORTED when a
        # server refused the held-out set with them (now counted as failed, so the uneven-failure rule stops the test)
        ("I’m unable to continue this text.", True),
        ("Unfortunately that's not something I can share.", True),
        ("Sorry, we're closed, said the baker.", False),
        ("I cannot believe it, she said.", False),
        ("Paris", False),
    ],
)
def test_refusals_are_told_from_prose(text, refused):
    from verifier.targets.queries import failure_of

    assert (failure_of(text, "stop") == "refusal") is refused
    assert failure_of(text, "stop", kind=TEXT) is None  # a text completion continues; it cannot decline


def test_hostile_bodies_are_failed_items_or_one_line(faults, cache, monkeypatch):
    """What an outside attack found: a body nested past the parser's depth, a 9 MiB answer, a
    server dripping a byte at a time past the timeout, a redirect elsewhere, a model list that is
    not a list, a model field quoting the API key back."""
    [nested] = fast_backoff(OpenAICompatibleTarget(faults.spec("nested"), FAST)).answer(
        [Query(CHAT, "deep")], cache=cache
    )
    assert nested.ok  # retried as a malformed body, then answered; never an internal error
    [huge] = OpenAICompatibleTarget(faults.spec("huge"), FAST).answer([Query(CHAT, "big")], cache=cache)
    assert huge.error == "response larger than 8 MiB"
    drip = OpenAICompatibleTarget(faults.spec("drip"), ApiOptions(timeout_s=1, retries=0))
    started = time.monotonic()
    [dripped] = drip.answer([Query(CHAT, "slow")], cache=cache)
    assert dripped.error == "response not complete within the timeout" and time.monotonic() - started < 2.5
    with pytest.raises(VerifierError, match="redirects .307. to http://127.0.0.1:9/elsewhere; name the final endpoint"):
        OpenAICompatibleTarget(faults.spec("redirect"), FAST).answer([Query(CHAT, "x")], cache=cache)
    assert OpenAICompatibleTarget(faults.spec("models_null"), FAST).answer([Query(CHAT, "x")], cache=cache)[0].ok

    secret = "sk-echoed-0123456789abcdef"
    monkeypatch.setenv("ECHO_KEY", secret)
    echo = OpenAICompatibleTarget(faults.spec("echo_key_model"), ApiOptions(retries=0), key_env="ECHO_KEY")
    assert echo.answer([Query(CHAT, "who answers?")], cache=cache)[0].ok
    assert secret not in json.dumps(echo.identity.as_finding()) and "[API key]" in json.dumps(
        echo.identity.details["served_as"]
    )
    assert secret.encode() not in cache.path.read_bytes()


def test_score_cli_with_an_api_target(faults, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from verifier.cli import app
    from verifier.scoring.table import ScoreTable

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    data = tmp_path / "docs.jsonl"
    words = "the archive of the river town kept its ledgers in a cold stone room beside the mill of".split()
    data.write_text(
        "".join(
            json.dumps(
                {
                    "text": "In the year the clerk "
                    + " ".join(words[i:] + words[:i])
                    + " Harrow kept "
                    + " ".join(words),
                    "label": i % 2,
                }
            )
            + "\n"
            for i in range(6)
        )
    )
    base = [
        "score",
        "--model",
        faults.spec("ok"),
        "--data",
        str(data),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "s.parquet"),
    ]
    runner = CliRunner()
    refused = runner.invoke(app, base)
    assert refused.exit_code == 2 and "output-only attacks cost queries, so they run only when named" in refused.output
    done = runner.invoke(app, [*base, "--signal", "prefix_lcs_token", "--signal", "name_cloze"])
    assert done.exit_code == 0, done.output
    table = ScoreTable.read(tmp_path / "s.parquet")
    assert (
        table.signal_names == ["prefix_lcs_token", "name_cloze"]
        and table.metadata["target"]["kind"] == "openai_compatible"
    )
    # the fault server echoes the prompt: the continuation is not the true suffix, and names are never guessed
    assert (table.signal("prefix_lcs_token") < 0.9).all() and (table.signal("name_cloze") == 0).all()
    bad = runner.invoke(app, [*base, "--signal", "prefix_lcs_token", "--api-key-env", "not a name"])
    assert bad.exit_code == 2 and "--api-key-env" in bad.output


def test_a_server_refusing_the_heldout_set_gets_no_verdict(faults, tmp_path, monkeypatch):
    """A README-only attacker's route to a wrong SUPPORTED: a server that refuses every held-out
    document in words the refusal detector did not know, and answers the suspect ones blandly.
    Refusals are failed items, so the route concludes nothing (INCONCLUSIVE, with the reason)
    instead of reading refusals as low scores."""
    import yaml

    from verifier.audit import run_audit

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    rows = [r for r in read_jsonl(ROOT / "verifier/examples/data/wikimia/length64.jsonl") if r["label"] == 1]
    suspect, heldout = rows[:40], rows[40:80]
    for name, part in (("suspect", suspect), ("heldout", heldout)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in part))
    faults.refused_fragments = [" ".join(r["text"].split()[:8]) for r in heldout]
    claim = {
        "claim": {
            "id": "refuse-heldout",
            "statement": "The served model was trained on these texts.",
            "kind": "trained_on",
            "made_by": "attack",
        },
        "model": {"target": faults.spec("refuse_some"), "api": {"retries": 0}},
        "evidence": {
            "suspect": {"path": "suspect.jsonl", "year": 2016},
            "heldout": {"path": "heldout.jsonl", "year": 2016},
        },
    }
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
    findings = run_audit(tmp_path / "claim.yaml", cache=ScoreCache(tmp_path / "cache")).findings
    assert findings["verdict"] != "SUPPORTED"
    record = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert record["status"] == "decided" and record["verdict"] == "INCONCLUSIVE"
    assert "heldout documents have no score (refusal: " in record["outcome"]["summary"]
    assert findings["failure_reasons"]["heldout prefix_lcs_word"] == {"refusal": 40}
