"""RFC 3161 timestamps against a real TSA (OpenSSL's ``openssl ts -reply`` on loopback, its own test CA).

``openssl ts -verify`` is the independent check of every stored token; verifier's own check must
agree with it, trust only pinned TSAs, and refuse tokens that date something else. A TSA that
fails in any way writes no bundle.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
import yaml
from tsa import LoopbackTSA, openssl_verify, stamping  # noqa: F401 - stamping is a fixture
from typer.testing import CliRunner

from verifier.cli import app

runner = CliRunner()


def audit(stamping: dict[str, Path], out: Path, *tsa: str):
    args = [
        "audit",
        str(stamping["claim"]),
        "--out",
        str(out),
        "--sign-key",
        str(stamping["key"]),
        "--cache-dir",
        str(out / "cache"),
    ]
    for url in tsa:
        args += ["--tsa", url]
    return runner.invoke(app, args)


def verify(bundle: Path, stamping: dict[str, Path], *tsa_certs: Path):
    args = ["verify", str(bundle), "--key", str(stamping["pub"]), "--trust-dir", str(bundle.parent / "no-trust-store")]
    for cert in tsa_certs:
        args += ["--tsa-cert", str(cert)]
    result = runner.invoke(app, args)
    return result.exit_code, [line for line in result.output.splitlines() if line.strip()]


def bundle_of(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.name.startswith("stamped-")]
    return folder


def signature(bundle: Path) -> bytes:
    return base64.b64decode(json.loads((bundle / "envelope.dsse.json").read_text())["signatures"][0]["sig"])


@pytest.fixture(scope="module")
def stamped(stamping, tmp_path_factory) -> Path:
    """A bundle dated by the honest TSA and by the rogue one."""
    out = tmp_path_factory.mktemp("out")
    with LoopbackTSA(stamping["tsa"]) as honest, LoopbackTSA(stamping["rogue"]) as rogue:
        result = audit(stamping, out, honest.url(), rogue.url())
    assert result.exit_code == 4, result.output
    return bundle_of(out)


def test_a_token_dates_the_signature_and_openssl_agrees(stamped, stamping):
    assert sorted(p.name for p in stamped.glob("timestamp-*")) == ["timestamp-1.tsr", "timestamp-2.tsr"]
    check = openssl_verify(stamped / "timestamp-1.tsr", signature(stamped), stamping["tsa"] / "ca.crt")
    assert check.returncode == 0 and "Verification: OK" in check.stdout
    # The independent verifier also refuses what verifier must refuse: another TSA's CA, other data.
    assert openssl_verify(stamped / "timestamp-1.tsr", signature(stamped), stamping["rogue"] / "ca.crt").returncode != 0
    assert (
        openssl_verify(stamped / "timestamp-1.tsr", signature(stamped)[::-1], stamping["tsa"] / "ca.crt").returncode
        != 0
    )
    status, lines = verify(stamped, stamping, stamping["tsa"] / "ca.crt")
    assert status == 0 and lines[-2].startswith("OK: ") and lines[-1].startswith("The evidence offered cannot test")
    assert lines[0].startswith("timestamp 1: ") and lines[0].endswith("by CN=Test TSA,O=verifier tests")
    assert lines[1].endswith("by CN=Rogue TSA,O=verifier tests (not trusted: no pinned TSA certificate vouches for it)")


def test_a_token_from_an_unpinned_tsa_is_not_trusted(stamped, stamping):
    status, lines = verify(stamped, stamping)
    assert status == 0 and all("(not trusted" in line for line in lines if line.startswith("timestamp"))
    status, lines = verify(
        stamped, stamping, stamping["rogue"] / "ca.crt"
    )  # pinning the rogue CA vouches for its token only
    assert "not trusted" in lines[0] and "not trusted" not in lines[1]


def test_a_token_moved_from_another_bundle_or_garbled_fails_verification(stamped, stamping, tmp_path):
    other = tmp_path / "other"
    with LoopbackTSA(stamping["tsa"]) as honest:
        setup_other = dict(stamping, claim=_changed_claim(stamping["claim"], tmp_path))
        assert audit(setup_other, other, honest.url()).exit_code == 4
    foreign = bundle_of(other) / "timestamp-1.tsr"
    for name, content in (
        ("timestamp-1.tsr", foreign.read_bytes()),
        ("timestamp-3.tsr", foreign.read_bytes()),
        ("timestamp-1.tsr", b"\x30\x03\x02\x01\x00"),
        ("timestamp-1.tsr", b"garbage"),
    ):
        copy = tmp_path / f"copy-{name}-{len(content)}"
        shutil.copytree(stamped, copy)
        (copy / name).write_bytes(content)
        status, lines = verify(copy, stamping, stamping["tsa"] / "ca.crt")
        assert status == 2 and len(lines) == 1 and lines[0].startswith(f"error: {name}: differs: "), (name, lines)
    copy = tmp_path / "misnamed"
    shutil.copytree(stamped, copy)
    (copy / "timestamp-01.tsr").write_bytes(foreign.read_bytes())  # only timestamp-<n>.tsr is a token's name
    status, lines = verify(copy, stamping, stamping["tsa"] / "ca.crt")
    assert status == 2 and lines == ["error: timestamp-01.tsr: differs: file is not covered by the signature"]


def _changed_claim(claim: Path, folder: Path) -> Path:
    data = yaml.safe_load(claim.read_text())
    data["claim"]["statement"] = "Another statement, so another signature."
    shutil.copy(claim.parent / "docs.jsonl", folder / "docs.jsonl")
    (folder / "claim.yaml").write_text(yaml.safe_dump(data))
    return folder / "claim.yaml"


@pytest.mark.parametrize(
    "path, message",
    [
        ("garbage", "the answer is not a DER timestamp response"),
        ("other", "the token dates other data than the signature sent"),
        ("rejection", "the answer is not a DER timestamp response"),
        ("missing", "answered HTTP 404"),
    ],
)
def test_a_tsa_that_fails_writes_no_bundle(stamping, tmp_path, path, message):
    with LoopbackTSA(stamping["tsa"]) as tsa:
        result = audit(
            stamping,
            tmp_path / "out",
            tsa.url(path) if path != "missing" else tsa.url("tsa").replace("/tsa", "/nothing"),
        )
    assert result.exit_code != 0 and message in result.output and len(result.output.strip().splitlines()) == 1
    assert not any(p.name.startswith("stamped-") for p in (tmp_path / "out").iterdir())


def test_an_unreachable_or_unusable_tsa_is_refused_in_one_line(stamping, tmp_path):
    result = audit(stamping, tmp_path / "out", "http://127.0.0.1:9/tsa")
    assert result.exit_code != 0 and "no timestamp (connection failed or dropped" in result.output
    result = audit(stamping, tmp_path / "out", "http://tsa.example.org/tsa")  # plain http leaving the machine
    assert result.exit_code != 0 and "--tsa http://tsa.example.org/tsa: plain http to another machine" in result.output
    result = runner.invoke(
        app,
        ["audit", str(stamping["claim"]), "--out", str(tmp_path / "out"), "--no-sign", "--tsa", "http://127.0.0.1:9/"],
    )
    assert (
        result.exit_code != 0 and "--tsa: an unsigned bundle (--no-sign) has no signature to timestamp" in result.output
    )


def test_a_slow_tsa_costs_a_bounded_time(stamping):
    import time

    from verifier.errors import VerifierError
    from verifier.trust.timestamps import stamp

    with LoopbackTSA(stamping["tsa"], slow_s=10) as tsa:
        started = time.monotonic()
        with pytest.raises(VerifierError, match="no timestamp \\(timeout"):
            stamp(b"a signature", tsa.url("slow"), timeout_s=1)
        assert time.monotonic() - started < 8


def test_marks_make_dates_its_registration_and_keys_trust_tsa_pins_the_authority(stamping, tmp_path):
    from conftest import WIKIMIA

    trust = tmp_path / "trust"
    pinned = runner.invoke(app, ["keys", "trust-tsa", str(stamping["tsa"] / "ca.crt"), "--trust-dir", str(trust)])
    assert pinned.exit_code == 0 and len(list((trust / "tsa").glob("*.pem"))) == 1
    with LoopbackTSA(stamping["tsa"]) as tsa:
        made = runner.invoke(
            app,
            [
                "marks",
                "make",
                str(WIKIMIA / "length64.jsonl"),
                "--out",
                str(tmp_path / "marks"),
                "--sign-key",
                str(stamping["key"]),
                "--siblings",
                "19",
                "--tsa",
                tsa.url(),
            ],
        )
        assert made.exit_code == 0, made.output
        failed = runner.invoke(
            app,
            [
                "marks",
                "make",
                str(WIKIMIA / "length64.jsonl"),
                "--out",
                str(tmp_path / "failed"),
                "--sign-key",
                str(stamping["key"]),
                "--tsa",
                tsa.url("garbage"),
            ],
        )
    assert "timestamp: " in made.output and (tmp_path / "marks" / "registration.timestamp-1.tsr").is_file()
    envelope = json.loads((tmp_path / "marks" / "registration.dsse.json").read_text())
    check = openssl_verify(
        tmp_path / "marks" / "registration.timestamp-1.tsr",
        base64.b64decode(envelope["signatures"][0]["sig"]),
        stamping["tsa"] / "ca.crt",
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert failed.exit_code != 0 and "the answer is not a DER timestamp response" in failed.output
    assert not (tmp_path / "failed").exists() or not any(
        (tmp_path / "failed").iterdir()
    )  # nothing written that looks dated


def test_a_timestamped_plan_puts_the_pre_registration_on_the_tsas_clock(stamping, tmp_path, monkeypatch):
    trust = tmp_path / "trust"
    assert (
        runner.invoke(app, ["keys", "trust-tsa", str(stamping["tsa"] / "ca.crt"), "--trust-dir", str(trust)]).exit_code
        == 0
    )
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(trust))
    with LoopbackTSA(stamping["tsa"]) as tsa:
        planned = runner.invoke(
            app,
            [
                "plan",
                str(stamping["claim"]),
                "--out",
                str(tmp_path / "plan.dsse.json"),
                "--sign-key",
                str(stamping["key"]),
                "--tsa",
                tsa.url(),
            ],
        )
    assert planned.exit_code == 0, planned.output
    assert (tmp_path / "plan.timestamp-1.tsr").is_file()
    result = runner.invoke(
        app,
        [
            "audit",
            str(stamping["claim"]),
            "--out",
            str(tmp_path / "out"),
            "--sign-key",
            str(stamping["key"]),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--plan",
            str(tmp_path / "plan.dsse.json"),
        ],
    )
    assert result.exit_code == 4, result.output
    bundle = bundle_of(tmp_path / "out")
    record = json.loads((bundle / "findings.json").read_text())["preregistration"]
    assert record["clock"].startswith("the clock of the time-stamping authority CN=Test TSA") and record["timestamped"]
    assert (bundle / "plan.timestamp-1.tsr").read_bytes() == (tmp_path / "plan.timestamp-1.tsr").read_bytes()
    assert "dated " in (bundle / "report.html").read_text() and "CN=Test TSA" in (bundle / "report.html").read_text()
    status, lines = verify(bundle, stamping)
    assert status == 0, lines
    # The plan's token is a signed file of the bundle: removed or swapped, the bundle no longer verifies.
    for change in ("remove", "swap"):
        copy = tmp_path / change
        shutil.copytree(bundle, copy)
        if change == "remove":
            (copy / "plan.timestamp-1.tsr").unlink()
        else:
            (copy / "plan.timestamp-1.tsr").write_bytes(b"\x30\x03\x02\x01\x00")
        status, lines = verify(copy, stamping)
        assert status == 2 and "plan.timestamp-1.tsr: differs" in lines[0], lines
    # A plan token that dates something else is refused at audit time.
    shutil.copy(tmp_path / "plan.timestamp-1.tsr", tmp_path / "keep.tsr")
    other = runner.invoke(
        app,
        [
            "plan",
            str(stamping["claim"]),
            "--out",
            str(tmp_path / "other.dsse.json"),
            "--sign-key",
            str(stamping["key"]),
        ],
    )
    assert other.exit_code == 0
    shutil.copy(tmp_path / "keep.tsr", tmp_path / "other.timestamp-1.tsr")
    refused = runner.invoke(
        app,
        [
            "audit",
            str(stamping["claim"]),
            "--out",
            str(tmp_path / "out2"),
            "--sign-key",
            str(stamping["key"]),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--plan",
            str(tmp_path / "other.dsse.json"),
        ],
    )
    assert (
        refused.exit_code == 2
        and "plan.timestamp-1.tsr: differs: the token dates other data than this signature" in refused.output
    )


def test_hostile_files_beside_a_registration_or_given_as_certificates_are_one_line(stamping, tmp_path):
    """Found by the outside attack: a FIFO named like a token hung the marks route, a link was
    followed out of the claim folder, a folder was an internal error; /dev/zero as --tsa-cert ran
    out of memory and a FIFO hung; a malformed --tsa URL was an internal error; a TSA's leaf
    certificate could be pinned though it anchors nothing."""
    import os

    from verifier.errors import VerifierError
    from verifier.trust.timestamps import read_tokens_beside

    registration = tmp_path / "registration.dsse.json"
    registration.write_text("{}")
    (tmp_path / "elsewhere.tsr").write_bytes(b"token")
    for make in (lambda p: os.mkfifo(p), lambda p: p.mkdir(), lambda p: p.symlink_to(tmp_path / "elsewhere.tsr")):
        token = tmp_path / "registration.timestamp-1.tsr"
        make(token)
        with pytest.raises(
            VerifierError, match="registration.timestamp-1.tsr: (not a plain file|cannot be read as a plain file)"
        ):
            read_tokens_beside(registration)
        token.rmdir() if token.is_dir() and not token.is_symlink() else token.unlink()
    os.mkfifo(tmp_path / "fifo.pem")
    for cert in ("/dev/zero", str(tmp_path / "fifo.pem"), str(tmp_path)):
        shown = runner.invoke(app, ["verify", str(tmp_path), "--tsa-cert", cert])
        assert (
            shown.exit_code == 2 and "not a plain file" in shown.output and len(shown.output.strip().splitlines()) == 1
        ), shown.output
    shown = audit(stamping, tmp_path / "out", "http://[::1/x")
    assert shown.exit_code == 2 and "--tsa http://[::1/x: not a URL" in shown.output
    leaf = runner.invoke(
        app, ["keys", "trust-tsa", str(stamping["tsa"] / "tsa.crt"), "--trust-dir", str(tmp_path / "trust")]
    )
    assert leaf.exit_code == 2 and "is not a CA certificate; pin the TSA's root CA" in leaf.output
