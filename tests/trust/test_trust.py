"""The trust boundary, tried as an attacker would: forged and re-signed bundles, added entries and
links, poisoned cache rows, hostile text and YAML, private paths, outputs that cannot be written.
Each case asserts the exact outcome: the exit status, the one line, what was (not) written."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT, WIKIMIA, write_refused_claim
from typer.testing import CliRunner

from verifier.audit import run_audit
from verifier.cli import app
from verifier.errors import VerifierError
from verifier.report import render_html
from verifier.targets import ScoreCache, ScoringOptions, resolve_model
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.trust import write_bundle
from verifier.trust.envelopes import key_id, public_pem, sign_envelope
from verifier.trust.keys import generate_key, load_private_key

runner = CliRunner()


def never_load(role: str):
    pytest.fail(f"the {role} model was loaded")


@pytest.fixture(scope="module")
def refused_claim(tmp_path_factory) -> Path:
    """A claim refused on its declared years: audited in seconds, no model loaded."""
    return write_refused_claim(tmp_path_factory.mktemp("claim"), "forgery-target")


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("keys")
    generate_key(folder / "genuine.key")
    generate_key(folder / "attacker.key")
    return {"genuine": folder / "genuine.key", "attacker": folder / "attacker.key"}


def make_bundle(claim: Path, out: Path, key: Path, edit=None) -> Path:
    result = run_audit(claim, target_factory=never_load)
    if edit:
        edit(result.findings)
    return write_bundle(
        result, render_html(result.findings, "0" * 64), b"%PDF-1.7 stand-in", out, load_private_key(key)
    )


def verify(*args: str):
    result = runner.invoke(app, ["verify", *args])
    return result.exit_code, [line for line in result.output.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def genuine(refused_claim, keys, tmp_path_factory) -> Path:
    return make_bundle(refused_claim, tmp_path_factory.mktemp("genuine"), keys["genuine"])


def test_a_genuine_bundle_verifies_only_with_its_signer_pinned(genuine, keys, tmp_path):
    status, lines = verify(str(genuine), "--trust-dir", str(tmp_path / "empty"))
    assert status == 3 and lines[0].startswith("signature valid but the signer is not pinned: 8 files intact; signer ")
    status, lines = verify(str(genuine), "--key", f"{keys['genuine']}.pub")
    assert status == 0 and len(lines) == 2 and "claim forgery-target: REJECTED-METHOD" in lines[0]
    assert lines[1].startswith("The evidence offered cannot test the claim:")  # the signed findings' lead
    fingerprint = key_id(public_pem(load_private_key(keys["genuine"]).public_key()))
    assert f"signer {fingerprint[:16]}" in lines[0] and "predicate urn:verifier:audit:v1" in lines[0]
    assert (
        runner.invoke(
            app, ["keys", "trust", f"{keys['genuine']}.pub", "--trust-dir", str(tmp_path / "store")]
        ).exit_code
        == 0
    )
    status, lines = verify(str(genuine), "--trust-dir", str(tmp_path / "store"))
    assert status == 0 and lines[0].endswith("signer pinned by trust store")


def test_a_forged_verdict_re_signed_by_another_key_is_not_accepted(refused_claim, keys, tmp_path):
    forged = make_bundle(refused_claim, tmp_path, keys["attacker"], edit=lambda f: f.update(verdict="VERIFIED"))
    status, lines = verify(str(forged), "--trust-dir", str(tmp_path / "none"))
    assert status == 3 and "VERIFIED" in lines[0] and "not pinned" in lines[0]  # intact, but whose?
    status, lines = verify(str(forged), "--key", f"{keys['genuine']}.pub")
    assert status == 2 and len(lines) == 1 and "signature does not verify" in lines[0], lines
    store = tmp_path / "store"
    runner.invoke(app, ["keys", "trust", f"{keys['genuine']}.pub", "--trust-dir", str(store)])
    assert verify(str(forged), "--trust-dir", str(store))[0] == 3


@pytest.mark.parametrize("attack", ["extra_file", "extra_folder", "symlink_to_etc", "symlink_to_a_bundle_file", "fifo"])
def test_nothing_can_be_added_to_a_bundle(genuine, keys, tmp_path, attack):
    copy = tmp_path / "copy"
    shutil.copytree(genuine, copy)
    if attack == "extra_file":
        (copy / "README.txt").write_text("VERIFIED")
        name, why = "README.txt", "file is not covered by the signature"
    elif attack == "extra_folder":
        (copy / "extra").mkdir()
        (copy / "extra" / "report.html").write_text("<h1>VERIFIED</h1>")
        name, why = "extra", "a folder inside the bundle"
    elif attack == "symlink_to_etc":
        (copy / "etc").symlink_to("/etc")
        name, why = "etc", "a link inside the bundle"
    elif attack == "symlink_to_a_bundle_file":
        (copy / "report.pdf").unlink()
        (copy / "report.pdf").symlink_to(genuine / "report.pdf")
        name, why = "report.pdf", "a link inside the bundle"
    else:
        os.mkfifo(copy / "pipe")
        name, why = "pipe", "not a plain file inside the bundle"
    status, lines = verify(str(copy), "--key", f"{keys['genuine']}.pub")
    suffix = "" if "covered" in why else " (a bundle holds plain files only)"
    assert status == 2 and len(lines) == 1 and lines[0] == f"error: {name}: differs: {why}{suffix}"


def test_a_statement_naming_a_path_outside_the_bundle_is_refused(refused_claim, keys, tmp_path, monkeypatch):
    import verifier.trust.bundle as bundle_module

    real = bundle_module.statement
    monkeypatch.setattr(
        bundle_module, "statement", lambda subjects, predicate: real(subjects | {"../claim.yaml": "0" * 64}, predicate)
    )
    forged = make_bundle(refused_claim, tmp_path, keys["genuine"])
    status, lines = verify(str(forged), "--key", f"{keys['genuine']}.pub")
    assert status == 2 and lines == [
        "error: envelope.dsse.json: differs: the statement names '../claim.yaml', which is not a bundle file"
    ]


def test_bundles_are_not_replaced_without_force_and_get_the_umask(refused_claim, keys, tmp_path):
    first = make_bundle(refused_claim, tmp_path, keys["genuine"])
    with pytest.raises(VerifierError, match="exists; refusing to replace it"):
        make_bundle(refused_claim, tmp_path, keys["attacker"])
    assert (first / "public_key.pem").read_bytes() == public_pem(load_private_key(keys["genuine"]).public_key())
    mask = os.umask(0)
    os.umask(mask)
    assert (first.stat().st_mode & 0o777) == 0o777 & ~mask and (
        (first / "findings.json").stat().st_mode & 0o777
    ) == 0o666 & ~mask


def test_verify_imports_no_ml_stack(genuine, keys):
    code = (
        "import sys; from typer.testing import CliRunner; from verifier.cli import app; "
        f"r = CliRunner().invoke(app, ['verify', {str(genuine)!r}, '--key', {str(keys['genuine']) + '.pub'!r}]); "
        "heavy = [m for m in ('torch', 'transformers', 'sklearn', 'scipy', 'pandas', 'weasyprint') if m in "
        "sys.modules]; "
        "print(r.exit_code, heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()
    assert out == "0 []"


def test_no_private_path_enters_the_findings_or_the_copied_claim(refused_claim, keys, tmp_path):
    claim = yaml.safe_load(refused_claim.read_text())
    claim["model"]["target"] = str(tmp_path / "private" / "models" / "smollm2.gguf")
    claim["evidence"]["suspect"]["path"] = str(refused_claim.parent / "docs.jsonl")
    path = refused_claim.parent / "absolute.yaml"
    path.write_text(yaml.safe_dump(claim))
    with pytest.raises(
        VerifierError, match=r"evidence.suspect.path: .* must be a path relative to the claim's folder and inside it"
    ):
        run_audit(path, target_factory=never_load)
    # A local model given by absolute path is named by its file name only, in findings and the copied claim.
    model = tmp_path / "private" / "models"
    model.mkdir(parents=True)
    (model / "smollm2.gguf").symlink_to(resolve_model("smollm2-135m").location + "/SmolLM2-135M-Instruct.Q4_1.gguf")
    claim["evidence"]["suspect"]["path"] = "../" + refused_claim.parent.name + "/docs.jsonl"
    path.write_text(yaml.safe_dump(claim))
    assert run_audit(path, target_factory=never_load)  # leaves and re-enters: still inside
    claim["evidence"]["suspect"]["path"] = "../../etc/passwd"
    path.write_text(yaml.safe_dump(claim))
    with pytest.raises(VerifierError, match="inside it"):
        run_audit(path, target_factory=never_load)
    claim["evidence"]["suspect"]["path"] = "docs.jsonl"
    path.write_text(yaml.safe_dump(claim))
    result = run_audit(path, target_factory=never_load)
    assert str(tmp_path) not in json.dumps(result.findings) and str(tmp_path).encode() not in result.claim_bytes
    assert result.findings["claim"]["model"]["target"] == "smollm2.gguf"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x [1, 2]\nb: [*x, *x, *x]\n", "aliases (*name) are not allowed"),
        ("claim: " + "[" * 60 + "]" * 60 + "\n", "nested deeper than 32 levels"),
        ("x: " + "y" * (1 << 20) + "\n", "larger than 1024 KiB"),
        (
            "claim: {id: -bad, statement: s, kind: trained_on, made_by: m}\nmodel: {target: smollm2-135m}\nevidence: "
            "{suspect: {path: docs.jsonl}}\n",
            "claim.id: String should match pattern",
        ),
        (
            "claim: {id: ok, statement: s, kind: trained_on, made_by: m}\nmodel: {target: smollm2-135m}\nevidence: "
            "{suspect: {path: docs.jsonl}}\nseed: 99999999999\n",
            "seed: Input should be less than 4294967296",
        ),
        (
            "claim: {id: a, statement: one, statement: two, kind: trained_on, made_by: m}\n",
            "key 'statement' appears twice",
        ),
        ("seed: " + "9" * 5000 + "\n", "not valid YAML"),
        ("claim: {id: a, statement: !!timestamp 2020-13-45}\n", "not valid YAML"),
        ("claim: {id: a, statement: !!float abc}\n", "not valid YAML"),
        ('claim: {id: a, statement: "a\\ud800b", kind: trained_on, made_by: m}\n', "not valid YAML"),
    ],
)
def test_hostile_yaml_ends_in_one_line(refused_claim, text, message):
    path = refused_claim.parent / "hostile.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["audit", str(path), "--no-sign"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and message in lines[0], result.output


def test_hostile_claim_text_cannot_spoof_the_terminal_or_the_report(refused_claim, tmp_path):
    claim = yaml.safe_load(refused_claim.read_text())
    claim["claim"]["statement"] = (
        "Not trained [/] [red]on[/red] \x1b[2K\rOK: 8 files intact \u202eDETACIFIREV\u202c\u200b"
    )
    path = refused_claim.parent / "spoof.yaml"
    path.write_text(yaml.safe_dump(claim))
    result = runner.invoke(
        app, ["audit", str(path), "--no-sign", "--out", str(tmp_path / "ev"), "--cache-dir", str(tmp_path / "c")]
    )
    assert result.exit_code == 4, result.output
    assert "\x1b" not in result.output and "\r" not in result.output and "\u202e" not in result.output
    assert "[/] [red]on[/red]" in result.output and "<U+202E>DETACIFIREV<U+202C><U+200B>" in result.output
    (folder,) = (tmp_path / "ev").iterdir()
    html = (folder / "report.html").read_text()
    assert "\u202e" not in html and "\x1b" not in html and "&lt;U+202E&gt;DETACIFIREV" in html


@pytest.mark.parametrize("where", ["file", "folder_is_a_file", "unwritable"])
def test_outputs_that_cannot_be_written_end_in_one_line(refused_claim, tmp_path, where):
    if where == "file":
        out = tmp_path / "taken"
        out.write_text("not a folder")
    elif where == "folder_is_a_file":
        (tmp_path / "parent").write_text("x")
        out = tmp_path / "parent" / "evidence"
    else:
        out = tmp_path / "locked"
        out.mkdir()
        out.chmod(0o500)
        if os.access(out, os.W_OK):  # root ignores permissions
            pytest.skip("running as root: permissions do not apply")
    result = runner.invoke(
        app, ["audit", str(refused_claim), "--no-sign", "--out", str(out), "--cache-dir", str(tmp_path / "c")]
    )
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output


def test_poisoned_cache_rows_are_refused_and_rescored(tiny_model_dir, tmp_path):
    """Adding 1.0 to cached log-probs under the genuine key would fake membership; the HMAC catches it."""
    texts = [json.loads(line)["text"] for line in (WIKIMIA / "length64.jsonl").read_text().splitlines()[:12]]
    target = CausalLMTarget(str(tiny_model_dir), ScoringOptions())
    cache = ScoreCache(tmp_path / "c", secret_path=tmp_path / "secret")
    honest = target.score(texts, cache=cache)
    assert cache.counts.stored == 12
    db = sqlite3.connect(cache.path)
    from verifier.targets.token_scores import TokenScores

    rows = db.execute("SELECT key, blob FROM token_scores_v2").fetchall()
    for key, blob in rows[:5]:
        scores = TokenScores.from_bytes(blob)
        forged = TokenScores(
            scores.token_ids,
            scores.logprob + 1.0,
            scores.mu,
            scores.sigma,
            scores.top1,
            scores.char_start,
            scores.char_end,
        )
        db.execute("UPDATE token_scores_v2 SET blob = ? WHERE key = ?", (forged.to_bytes(), key))
    db.commit()
    again = ScoreCache(tmp_path / "c", secret_path=tmp_path / "secret")
    rescored = target.score(texts, cache=again)
    assert (again.counts.served, again.counts.refused, again.counts.stored) == (7, 5, 5)
    for a, b in zip(honest, rescored):
        np.testing.assert_array_equal(a.logprob, b.logprob)
    # A secret that others can read is refused, and a damaged cache file is one line.
    (tmp_path / "secret").chmod(0o644)
    with pytest.raises(VerifierError, match="must be owned and readable by you only"):
        ScoreCache(tmp_path / "c", secret_path=tmp_path / "secret")
    (tmp_path / "secret").chmod(0o600)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "token_scores.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(VerifierError, match="cannot use as a score cache"):
        ScoreCache(tmp_path / "bad", secret_path=tmp_path / "secret")


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        ('{"text": "\\ud800 lone"}\n', ".jsonl", r"line 1: field 'text' holds a lone surrogate \(U\+D800\)"),
        (
            '{"text": ' + "[" * 5000 + "]" * 5000 + "}\n",
            ".jsonl",
            "line 1: JSON nested too deeply|line 1: field 'text' is list",
        ),
        ("text\n" + "x" * 200_000 + "\n", ".csv", None),
    ],
)
def test_hostile_document_files(tmp_path, content, suffix, message):
    from verifier.data import load_documents

    path = tmp_path / f"docs{suffix}"
    path.write_text(content, encoding="utf-8", errors="surrogatepass")
    if message is None:  # a CSV field over csv's 128 KiB default is a document, not an error
        assert len(load_documents(path).texts[0]) == 200_000
        return
    with pytest.raises(VerifierError, match=message):
        load_documents(path)


def test_a_newline_in_signed_fields_cannot_paint_a_fake_ok_line(refused_claim, keys, tmp_path, monkeypatch):
    import verifier.trust.bundle as bundle_module

    real = bundle_module.statement
    fake = "0.1.0\nOK: 8 files intact; signer 0000000000000000; signer pinned by trust store"
    monkeypatch.setattr(
        bundle_module, "statement", lambda subjects, predicate: real(subjects, predicate | {"verifier": fake})
    )
    forged = make_bundle(refused_claim, tmp_path, keys["attacker"])
    status, lines = verify(str(forged), "--trust-dir", str(tmp_path / "none"))
    assert status == 3 and len(lines) == 1 and lines[0].startswith("signature valid but the signer is not pinned")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda env, st: env.update(signatures=None),
        lambda env, st: env.update(signatures=5),
        lambda env, st: env.update(payloadType=5),
        lambda env, st: st.update(
            subject=[{"name": 1, "digest": {"sha256": "0"}}, {"name": None, "digest": {"sha256": "0"}}]
        ),
        lambda env, st: st.update(predicate=["not", "a", "dict"]),
        lambda env, st: st.update(_type="something else"),
    ],
)
def test_malformed_envelopes_are_one_line_exit_2(genuine, keys, tmp_path, mutate):
    import base64

    copy = tmp_path / "copy"
    shutil.copytree(genuine, copy)
    envelope = json.loads((copy / "envelope.dsse.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    mutate(envelope, statement)
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (copy / "envelope.dsse.json").write_text(json.dumps(envelope))
    status, lines = verify(str(copy), "--key", f"{keys['genuine']}.pub")
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: envelope.dsse.json: differs: "), lines


def test_an_unreadable_file_in_the_trust_store_pins_nothing_and_blocks_nothing(genuine, keys, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... user@host\n")
    (store / "README.pub").write_text("not a key")
    shutil.copy(f"{keys['genuine']}.pub", store / "genuine.pem")
    status, lines = verify(str(genuine), "--trust-dir", str(store))
    assert status == 0 and lines[0].endswith("signer pinned by trust store")


def test_jsonl_strings_may_hold_line_separators(tmp_path):
    from verifier.data import load_documents

    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"text": "one\u2028two\x85three"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert load_documents(path).texts == ["one\u2028two\x85three"]


def test_redaction_replaces_whole_folders_only(tmp_path, monkeypatch):
    from verifier.errors import redact_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    text = f"model models/acme: cannot read {tmp_path}/m/docs.jsonl"
    assert redact_paths(text, Path("m")) == "model models/acme: cannot read <claim folder>/docs.jsonl"


def test_a_policy_outside_the_claim_folder_is_named_not_located(refused_claim, tmp_path):
    shutil.copy(ROOT / "verifier" / "policies" / "default.yaml", tmp_path / "shared-policy.yaml")
    claim = yaml.safe_load(refused_claim.read_text())
    claim["policy"] = str(tmp_path / "shared-policy.yaml")
    path = refused_claim.parent / "shared.yaml"
    path.write_text(yaml.safe_dump(claim))
    result = run_audit(path, target_factory=never_load)
    assert str(tmp_path) not in json.dumps(result.findings) and str(tmp_path).encode() not in result.claim_bytes
    assert (
        result.findings["claim"]["policy"] == "shared-policy.yaml"
        and result.policy_bytes == (tmp_path / "shared-policy.yaml").read_bytes()
    )


def test_a_bundle_cannot_pin_its_own_signer(genuine, keys, tmp_path):
    """``--trust-dir`` or ``--key`` pointing inside the bundle would let the bundle vouch for itself."""
    copy = tmp_path / "b"
    shutil.copytree(genuine, copy)
    code, lines = verify(str(copy), "--trust-dir", str(copy))
    assert code == 2 and "inside the bundle; a bundle cannot pin its own signer" in lines[-1]
    code, lines = verify(str(copy), "--key", str(copy / "public_key.pem"))
    assert code == 2 and "inside the bundle" in lines[-1]


def test_verify_says_when_a_folder_is_not_a_bundle(genuine, tmp_path):
    shutil.copytree(genuine, tmp_path / "evidence" / genuine.name)
    code, lines = verify(str(tmp_path / "evidence"))
    assert (
        code == 2
        and "not an evidence bundle" in lines[-1]
        and f"verify one of them, e.g. evidence/{genuine.name}" in lines[-1]
    )


def test_a_huge_sparse_file_in_a_bundle_costs_no_memory(genuine, tmp_path):
    import resource

    copy = tmp_path / "b"
    shutil.copytree(genuine, copy)
    with open(copy / "report.pdf", "wb") as handle:
        handle.truncate(1 << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, lines = verify(str(copy))
    assert code == 2 and lines[-1].endswith("report.pdf: differs: SHA-256 does not match the signed statement")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_force_never_replaces_a_link_or_a_folder_that_is_no_bundle(refused_claim, keys, tmp_path):
    first = make_bundle(refused_claim, tmp_path / "a", keys["genuine"])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / first.name).symlink_to(first, target_is_directory=True)
    result = run_audit(refused_claim, target_factory=never_load)
    with pytest.raises(VerifierError, match="exists and is a link; not replaced"):
        write_bundle(
            result,
            render_html(result.findings, "0" * 64),
            b"%PDF",
            tmp_path / "b",
            load_private_key(keys["genuine"]),
            force=True,
        )
    (tmp_path / "c" / first.name).mkdir(parents=True)
    (tmp_path / "c" / first.name / "notes.txt").write_text("mine")
    with pytest.raises(VerifierError, match="exists and is not an evidence bundle; not replaced"):
        write_bundle(
            result,
            render_html(result.findings, "0" * 64),
            b"%PDF",
            tmp_path / "c",
            load_private_key(keys["genuine"]),
            force=True,
        )
    assert (tmp_path / "c" / first.name / "notes.txt").read_text() == "mine"


def test_a_bundle_of_an_older_findings_format_still_verifies(tmp_path):
    """Renaming findings keys changes the findings format, never what an issued bundle proves."""
    from verifier.trust import verify_bundle

    old = Path(__file__).parent / "bundles" / "findings-v3"
    result = verify_bundle(old, (old.parent / "findings-v3.signer.pub").read_bytes(), tmp_path / "trust")
    assert result.pinned_by is not None and result.predicate["verdict"] == "VERIFIED"
    assert json.loads((old / "findings.json").read_text())["format"] == "verifier-findings/3"
    copy = tmp_path / "forged"
    shutil.copytree(old, copy)
    findings = copy / "findings.json"
    findings.write_text(findings.read_text().replace('"VERIFIED"', '"CONTRADICTED"', 1))
    with pytest.raises(VerifierError, match="findings.json"):
        verify_bundle(copy, (old.parent / "findings-v3.signer.pub").read_bytes(), tmp_path / "trust")


@pytest.mark.parametrize(
    "forge",
    [
        lambda text: text.replace(
            '"payloadType"', '"payloadType": "text/plain", "payloadType"', 1
        ),  # a key given twice: which one is signed?
        lambda text: text.replace('"signatures": [', '"signatures": ["not an object", ', 1),
    ],
)
def test_envelopes_are_read_strictly_before_anything_is_trusted(tmp_path, forge):
    from verifier.trust import verify_bundle

    copy = tmp_path / "b"
    shutil.copytree(Path(__file__).parent / "bundles" / "findings-v3", copy)
    envelope = copy / "envelope.dsse.json"
    envelope.write_text(forge(envelope.read_text()))
    with pytest.raises(VerifierError, match="envelope.dsse.json: differs: not a readable DSSE envelope"):
        verify_bundle(
            copy, (Path(__file__).parent / "bundles" / "findings-v3.signer.pub").read_bytes(), tmp_path / "trust"
        )


@pytest.mark.parametrize(
    "change, key",
    [
        ({"verdict": "CONTRADICTED"}, "verdict"),
        ({"verdict": "TOTALLY-FINE"}, "verdict"),
        ({"claim_id": "some-other-claim"}, "claim_id"),
    ],
)
def test_the_signer_cannot_sign_a_verdict_its_findings_do_not_hold(genuine, keys, tmp_path, change, key):
    """An outside attack (README only): re-signing the statement with the real key and another
    verdict or claim id left findings.json intact, and verify printed OK with the signed verdict."""
    import base64

    copy = tmp_path / "copy"
    shutil.copytree(genuine, copy)
    envelope = json.loads((copy / "envelope.dsse.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"].update(change)
    resigned = sign_envelope(json.dumps(statement).encode(), load_private_key(keys["genuine"]))
    (copy / "envelope.dsse.json").write_text(json.dumps(resigned))
    status, lines = verify(str(copy), "--key", f"{keys['genuine']}.pub")
    assert status == 2 and lines == [
        f"error: envelope.dsse.json: differs: the statement's {key} is not the one findings.json holds"
    ], lines


def test_predicate_types_name_no_domain_and_the_first_versions_still_verify():
    from verifier.trust.envelopes import is_predicate, predicate_type

    for name in ("audit", "batch", "plan", "marks-registration"):
        assert predicate_type(name) == f"urn:verifier:{name}:v1" and is_predicate(predicate_type(name), name)
        assert is_predicate(f"https://github.com/verifier/verifier/{name}/v1", name)  # bundles of the first versions
    assert not is_predicate(predicate_type("audit"), "plan")
    assert not is_predicate("https://example.org/verifier/audit/v1", "audit")
