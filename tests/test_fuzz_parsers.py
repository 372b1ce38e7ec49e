"""Fuzzing every parser that reads other parties' bytes (hypothesis): claims, policies, corpus
files, index manifests, HTTP answers, DSSE envelopes and registrations.

The property is the same everywhere: whatever the bytes, the parser accepts them or refuses them
with a ``VerifierError`` (one line for the user); it never raises anything else (a traceback, an
"internal error"), never hangs. Examples are few per parser so CI stays inside its budget; the
generated inputs mix random bytes with mutations of a valid file, which reach deeper.
"""

from __future__ import annotations

import base64
import gzip
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier.errors import VerifierError

ROOT = Path(__file__).resolve().parent.parent
FUZZ = settings(
    max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


def mutated(valid: bytes) -> st.SearchStrategy[bytes]:
    """``valid`` with a slice replaced by random bytes, cut short, or doubled in part."""
    return st.tuples(
        st.integers(0, len(valid)), st.integers(0, 40), st.binary(max_size=40), st.sampled_from(["swap", "cut", "dup"])
    ).map(
        lambda t: (
            (valid[: t[0]] + t[2] + valid[t[0] + t[1] :])
            if t[3] == "swap"
            else valid[: t[0]]
            if t[3] == "cut"
            else valid[: t[0]] + valid[t[0] : t[0] + t[1]] * 3 + valid[t[0] :]
        )
    )


def refused_or_accepted(call) -> None:  # any callable
    try:
        call()
    except VerifierError as exc:
        assert "\n" not in str(exc).strip() and "Traceback" not in str(exc)


CLAIM = ROOT / "verifier" / "examples" / "wikimia-smollm2.yaml"


@pytest.fixture(scope="module")
def claim_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-claim-"))
    shutil.copy(ROOT / "verifier/examples/data/wikimia/length64.jsonl", folder / "docs.jsonl")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@FUZZ
@given(
    st.one_of(mutated(CLAIM.read_bytes()), st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode()))
)
def test_claims(claim_dir, data):
    from verifier.claims import load_claim

    (claim_dir / "claim.yaml").write_bytes(data)
    refused_or_accepted(lambda: load_claim(claim_dir / "claim.yaml"))


@FUZZ
@given(
    st.one_of(
        mutated((ROOT / "verifier/policies/default.yaml").read_bytes()),
        json_values.map(lambda v: json.dumps(v).encode()),
    )
)
def test_policies(claim_dir, data):
    from verifier.policy import load_policy

    (claim_dir / "policy.yaml").write_bytes(data)
    refused_or_accepted(lambda: load_policy(claim_dir / "policy.yaml"))


CORPUS = "".join(
    json.dumps({"text": f"document {i} of the corpus with words", "url": f"https://x{i}.org/a", "date": "2023-07-04"})
    + "\n"
    for i in range(8)
).encode()


@FUZZ
@given(
    st.one_of(mutated(CORPUS), st.binary(max_size=200)),
    st.sampled_from(["c.jsonl", "c.jsonl.gz", "c.txt", "c.parquet"]),
)
def test_corpus_files(claim_dir, data, name):
    from verifier.corpus.sources import ReadLimits, Source, SourceStats, read_documents

    path = claim_dir / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") and len(data) % 2 else data)
    refused_or_accepted(
        lambda: list(read_documents(Source(name, path), SourceStats(name), "text", ReadLimits(max_document_bytes=4096)))
    )


@pytest.fixture(scope="module")
def built_index(claim_dir: Path) -> Path:
    from verifier.corpus import build_index

    (claim_dir / "corpus.jsonl").write_bytes(CORPUS)
    build_index([claim_dir / "corpus.jsonl"], claim_dir / "index")
    return claim_dir / "index"


@FUZZ
@given(st.data())
def test_index_manifests_and_files(built_index, data):
    from verifier.corpus import CorpusIndex

    work = Path(tempfile.mkdtemp(prefix="fuzz-index-"))
    try:
        shutil.copytree(built_index, work / "index")
        target = data.draw(
            st.sampled_from(
                [
                    "manifest.json",
                    "shard-00000/sa.bin",
                    "shard-00000/docs.bin",
                    "shard-00000/meta.idx",
                    "shard-00000/meta.jsonl",
                    "shard-00000/text.bin",
                ]
            )
        )
        path = work / "index" / target
        path.write_bytes(data.draw(mutated(path.read_bytes())))
        refused_or_accepted(lambda: CorpusIndex.open(work / "index", verify=data.draw(st.booleans())))
    finally:
        shutil.rmtree(work, ignore_errors=True)


ANSWER = json.dumps(
    {
        "choices": [{"message": {"content": "an answer", "reasoning_content": "a trace"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        "model": "m",
    }
).encode()
INDEX_ANSWER = json.dumps(
    {
        "spans": [{"l": 0, "r": 3, "count": 2, "docs": [{"doc_ix": 1, "metadata": {}, "offset": 0, "snippet": "x"}]}],
        "count": 2,
        "cnt": 2,
        "documents": [{"doc_ix": 0, "metadata": {"id": "a"}, "offset": 1, "snippet": "y"}],
    }
).encode()


@FUZZ
@given(
    st.one_of(
        mutated(ANSWER),
        mutated(INDEX_ANSWER),
        st.binary(max_size=200),
        json_values.map(lambda v: json.dumps(v).encode()),
    ),
    st.sampled_from([200, 400, 404, 413, 422, 500]),
)
def test_http_answers(data, status):
    from verifier.boundary.peers import Answer, ItemFailed, PeerAccess, Retry
    from verifier.corpus.backends import RemoteBackend
    from verifier.targets.api_client import ApiClient
    from verifier.targets.kinds.openai_compatible import parse_answer
    from verifier.targets.queries import CHAT, TEXT

    answer = Answer(status, {}, data)
    client = ApiClient("http://127.0.0.1:9/v1", PeerAccess(), None, 1.0, 0, None)
    try:
        body = client._read(answer)
        parse_answer(body, CHAT)
        parse_answer(body, TEXT)
    except (ItemFailed, Retry, VerifierError):
        pass
    remote = RemoteBackend("http://127.0.0.1:9/", "demo", retries=0)
    remote.client.post = lambda path, body, read: read(answer)  # the answer, as the peer client hands it over
    for call in (
        lambda: remote.count("a b c"),
        lambda: remote.find("a b c"),
        lambda: remote.lookup(["a b c d"], ngram=2, min_span_words=2),
    ):
        try:
            call()
        except (Retry, VerifierError):
            pass


@pytest.fixture(scope="module")
def signed_envelope() -> bytes:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from verifier.trust.envelopes import sign_envelope, statement

    body = json.dumps(
        statement(
            {"claim.yaml": "0" * 64},
            {"claim_id": "c", "verdict": "INCONCLUSIVE", "findings_sha256": "0" * 64, "verifier": "0"},
        )
    ).encode()
    return json.dumps(sign_envelope(body, Ed25519PrivateKey.generate())).encode()


@FUZZ
@given(st.data())
def test_dsse_envelopes_of_bundles_and_registrations(signed_envelope, claim_dir, data):
    from verifier.marks.registration import read_registration
    from verifier.trust.bundle import _read_envelope

    raw = data.draw(
        st.one_of(
            mutated(signed_envelope),
            st.binary(max_size=100),
            json_values.map(
                lambda v: json.dumps(
                    {
                        "payload": base64.b64encode(json.dumps(v).encode()).decode(),
                        "payloadType": "application/vnd.in-toto+json",
                        "signatures": v,
                    }
                ).encode()
            ),
        )
    )
    refused_or_accepted(lambda: _read_envelope(raw))
    (claim_dir / "registration.dsse.json").write_bytes(raw)
    refused_or_accepted(
        lambda: read_registration(claim_dir / "registration.dsse.json", trust_dir=claim_dir / "no-trust")
    )


@FUZZ
@given(
    st.lists(
        st.sampled_from(
            [
                "<p>",
                "</p>",
                "<b>",
                "<![",
                "CDATA[",
                "]]>",
                "<!--",
                "-->",
                "<!",
                "%",
                "&amp;",
                "&#x",
                "<?",
                "?>",
                "<script>",
                "</script>",
                "A-Z0-9",
                "if !IE",
                "\\n",
                "\\t",
                " word ",
                "'",
                '"',
                "=",
                ">",
                "<",
                "-",
            ]
        ),
        max_size=60,
    ).map("".join)
)
def test_stored_form_readings_of_markup_like_text(text):
    """Corpus and suspect texts are read in their stored forms; a regex quoted in a page
    (``<![A-Z0-9]``) once crashed the standard HTML parser inside an index build."""
    from verifier.corpus.forms import read_form

    reading = read_form(text)
    assert isinstance(reading.text, str)
    assert read_form('<p>a</p><b>x</b><i>y</i> pattern "<![A-Z0-9]+" <p>end</p>').form == "markup"
