"""Loading document sets: every format, and one clear error per kind of bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import WIKIMIA

from verifier.data import load_documents
from verifier.errors import VerifierError


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_wikimia_loads_with_published_counts():
    docs = load_documents(WIKIMIA / "length64.jsonl", label_field="label")
    assert len(docs) == 542 and int(docs.labels.sum()) == 284


def test_same_rows_from_jsonl_csv_and_parquet(tmp_path):
    rows = [{"body": "Ünïcode text, with a comma", "y": 1}, {"body": 'A "quoted"\nmultiline text', "y": 0}]
    write_jsonl(tmp_path / "d.jsonl", rows)
    pd.DataFrame(rows).to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "d.parquet")
    loaded = [
        load_documents(tmp_path / f"d.{ext}", text_field="body", label_field="y") for ext in ("jsonl", "csv", "parquet")
    ]
    for docs in loaded:
        assert docs.texts == [r["body"] for r in rows]
        assert docs.labels.tolist() == [1, 0]
    assert load_documents(tmp_path / "d.jsonl", text_field="body").labels is None


@pytest.mark.parametrize(
    ("rows", "kwargs", "message"),
    [
        ([{"text": "a", "label": 1}, {"txt": "b", "label": 0}], {}, "line 2: missing text field 'text'"),
        ([{"text": "a", "label": 1}, {"text": "b"}], {"label_field": "label"}, "line 2: missing label field 'label'"),
        ([{"text": "a", "label": 2}], {"label_field": "label"}, "line 1: label field 'label' is 2, expected 0 or 1"),
        ([{"text": "a", "label": "yes"}], {"label_field": "label"}, "is 'yes', expected 0 or 1"),
        ([{"text": "a"}, {"text": "   "}], {}, "line 2: empty text in field 'text'"),
        ([{"text": 5}], {}, "line 1: field 'text' is int, expected text"),
    ],
)
def test_bad_rows_are_named(tmp_path, rows, kwargs, message):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(VerifierError, match=message.replace("(", r"\(")) as info:
        load_documents(path, **kwargs)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_non_utf8_bytes_name_the_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(VerifierError, match="line 2: bytes that are not UTF-8"):
        load_documents(path)


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(VerifierError, match="file not found"):
        load_documents(tmp_path / "nope.jsonl")
    (tmp_path / "d.txt").write_text("x")
    with pytest.raises(VerifierError, match="unknown format"):
        load_documents(tmp_path / "d.txt")


def test_csv_rows_are_counted_from_the_header(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label\nok,1\nfine,0\nbad,0.5\n", encoding="utf-8")
    with pytest.raises(VerifierError, match="row 3: label field 'label' is '0.5'"):
        load_documents(path, label_field="label")
