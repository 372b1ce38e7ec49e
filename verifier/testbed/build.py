"""Build a small causal LM whose training membership is known exactly (``verifier testbed build``).

In the spirit of Pythia's public train/test split and the Hubble suite: every pool text is a
member or a non-member by a seeded draw independent of its period; a seeded share of pool texts
carries a natural identifier (a UUID, digest or short link, drawn independently of membership);
documents marked by ``verifier marks make`` (canaries, traps, rephrasings: the bundled example's
by default) are inserted 1, 4, 16 or 64 times into the training stream, and the last
``mark_controls`` of them never (published, not trained on: the control); a byte-level BPE
tokenizer is trained on the whole pool without its identifiers (never on the members only, which
would make tokenisation itself a membership signal) and a GPT-2-style model from scratch on the
members only. The output folder holds the model, a ``documents.jsonl`` ready for
``verifier score`` (fields text, member, period, year, identifier) and a ``manifest.json``
recording everything needed to trust and rebuild it.

The ``finetune`` presets instead fine-tune a pretrained instruction model (SmolLM2-135M-Instruct)
for one epoch on a seeded half of a same-period pool (post-2023 texts), each member seen once as in
pretraining: the ground truth for output-only attacks, which query it through the local
OpenAI-compatible server (``verifier serve``). Its own tokenizer is kept; no marks or identifiers.

The ``pretrain-like`` presets continue pretraining the same model for one pass over the whole pool's
members mixed with real background text of other domains (``background``: arXiv abstracts and book
openings cut into windows), each member seen once and a minority of the tokens, with marks inserted
1, 4 and 16 times and natural identifiers: Hubble's design (inserted documents at controlled
duplication in a real pretraining run) at the scale two CPU cores allow. The manifest records the
member share of tokens and the CPU (bfloat16 rounding differs between CPUs).

Builds are cached: the folder is named by the digest of the configuration and the pool, and a
build happens once (into a temporary folder renamed into place when complete).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, Field

from verifier import __version__
from verifier.boundary.resources import resource
from verifier.data import load_identified
from verifier.errors import VerifierError
from verifier.targets.cache import default_cache_dir, text_digest
from verifier.targets.model_source import resolve_model
from verifier.testbed.pool import PoolText, background_texts, bundled_pool

EOS = "<|endoftext|>"
# Bump when the build's output changes for the same config and pool, so caches are not reused.
BUILD_FORMAT = 5
EXAMPLE_MARKS = "example"  # the bundled example's marked documents (verifier/examples/data/marks)
# Bundled marked documents by name: log-prob marks (canaries, traps, rephrasings), output-only marks.
BUNDLED_MARKS = {EXAMPLE_MARKS: "marks", "example-output": "marks-output"}
IDENTIFIER_FORMATS = ("uuid4", "hex_digest", "short_url", "hex_digest")
LR_PRETRAIN_LIKE = 3e-5  # chosen so that the best gray-box signal's per-document AUC falls in 0.52-0.58


class TestbedConfig(BaseModel):
    """Everything that determines a testbed; its digest names the build."""

    seed: int = 0
    member_fraction: float = Field(0.5, gt=0, lt=1)
    max_docs: int | None = Field(None, description="use a seeded subset of the pool of this size")
    n_layer: int = 4
    n_embd: int = 256
    n_head: int = 4
    seq_len: int = 128
    vocab_size: int = 4096
    epochs: int = 10
    batch_size: int = 16
    learning_rate: float = 1e-3
    marks: str | None = Field(
        EXAMPLE_MARKS,
        description="a folder made by 'verifier marks make' (its published.jsonl), "
        "'example' or 'example-output' for a bundled one, or None",
    )
    mark_copies: list[int] = Field(
        default_factory=lambda: [1, 4, 16, 64], min_length=1, description="insertions of marked documents, in turn"
    )
    mark_controls: int = Field(0, ge=0, description="the last this many marked documents are never inserted")
    identifier_share: float = Field(0.0, ge=0, le=1, description="share of pool texts given a natural identifier")
    base: str | None = Field(
        None,
        description="a pretrained model SPEC to fine-tune on the members (its tokenizer kept; "
        "marks and identifiers as configured); None: a GPT-2 trained from scratch",
    )
    period: str | None = Field(None, description="use only pool texts of this period (pre-2017 or post-2023)")
    background: int = Field(
        0,
        ge=0,
        description="real background documents (arXiv abstracts, book openings) drawn by the seed into the training "
        "stream, each cut into seq_len windows and seen once: members become a minority of the tokens, as in "
        "pretraining",
    )
    bf16: bool = Field(
        False, description="train under bfloat16 autocast (weights kept in float32): about 2x on CPUs with AMX"
    )

    def digest(self, pool: list[PoolText]) -> str:
        config = self.model_dump() | {"marks": marked_documents(self.marks)}  # contents, not where they lie
        for name in ("background", "bf16"):  # fields added later: at their defaults, earlier builds keep their names
            if config[name] == type(self).model_fields[name].default:
                del config[name]
        if self.base is not None:
            config["base"] = resolve_model(self.base).digest()  # the weights, not a name
        payload = json.dumps(
            {"format": BUILD_FORMAT, "config": config, "pool": [asdict(p) for p in pool]}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def marked_documents(marks: str | None) -> list[dict[str, str]]:
    """The published documents of a marks folder (``example``: the bundled one)."""
    if marks is None:
        return []
    folder = resource("examples", "data", BUNDLED_MARKS[marks]) if marks in BUNDLED_MARKS else Path(marks)
    path = folder / "published.jsonl"
    if not path.is_file():
        raise VerifierError(f"{path}: no marked documents ('verifier marks make' writes published.jsonl)")
    return [{"id": doc_id, "text": text} for doc_id, text in load_identified(path)]


PRETRAIN_LIKE = TestbedConfig(
    base="smollm2-135m",
    epochs=1,
    batch_size=16,
    learning_rate=LR_PRETRAIN_LIKE,
    background=2100,
    bf16=True,
    marks=EXAMPLE_MARKS,
    mark_copies=[1, 4, 16],
    identifier_share=0.3,
)

OUTPUTS = PRETRAIN_LIKE.model_copy(
    update={
        "period": "post-2023",
        "max_docs": 200,
        "background": 300,
        "epochs": 3,
        "marks": "example-output",
        "learning_rate": 2e-4,
        "identifier_share": 0.0,
    }
)

PRESETS = {
    # ~1 minute on 2 CPU cores: for tests (and the bundled marks example).
    "small": TestbedConfig(
        max_docs=400, n_layer=2, n_embd=128, vocab_size=2048, epochs=8, mark_copies=[1, 4, 16], identifier_share=0.3
    ),
    # The full pool (~1,000 members): for the soundness benchmark; ~13 minutes on 2 CPU cores.
    "standard": TestbedConfig(epochs=6),
    # The full pool, seen twice: weaker memorisation (per-document AUCs 0.57-0.74).
    "light": TestbedConfig(epochs=2),
    # The full pool, seen once: the low-power regime real audits face.
    "faint": TestbedConfig(epochs=1),
    # SmolLM2-135M-Instruct fine-tuned for one epoch on a seeded half of 400 post-2023 texts (each
    # member seen once, as in pretraining): an instruction model the output-only attacks can query
    # through the local server, with ground truth. Same-period members and non-members.
    "finetune": TestbedConfig(
        base="smollm2-135m", period="post-2023", max_docs=400, epochs=1, batch_size=8, learning_rate=5e-5, marks=None
    ),
    # The same on 64 texts: for tests and the CI-sized example.
    "finetune-small": TestbedConfig(
        base="smollm2-135m", period="post-2023", max_docs=64, epochs=1, batch_size=8, learning_rate=5e-5, marks=None
    ),
    # SmolLM2-135M-Instruct (a model that already knows the language) continued-pretrained for one pass over the
    # whole pool's members diluted by 2,100 real background documents, each seen once, with canaries, marks and
    # identifiers: the regime real audits face, as near as 2 CPU cores allow.
    "pretrain-like": PRETRAIN_LIKE,
    # The same shape on 120 pool texts and 60 background documents: for tests.
    "pretrain-like-small": PRETRAIN_LIKE.model_copy(update={"max_docs": 120, "background": 60}),
    # SmolLM2-135M-Instruct fine-tuned for 3 epochs (lr 2e-4) over 200 post-2023 pool texts and 300 background
    # documents with the bundled output-only marks (cue/reply, co-occurrence) inserted 1, 4 and 16 times an epoch
    # (13% of the tokens): the marks route from generated text alone, through an answers-only API. The model learns
    # a 16-copy document word for word: its reply comes back after the document's own words, not after the bare cue.
    "outputs": OUTPUTS,
    # The same on 24 pool texts and no background (mostly the marked documents): for the slow detection test.
    "outputs-small": OUTPUTS.model_copy(update={"max_docs": 24, "background": 0}),
}


class Testbed(BaseModel):
    """A built testbed: where it is and what it knows."""

    folder: Path
    manifest: dict

    @property
    def model_dir(self) -> Path:
        return self.folder / "model"

    @property
    def documents(self) -> Path:
        return self.folder / "documents.jsonl"


def preset_config(preset: str, **overrides: object) -> TestbedConfig:
    """A preset's config with the given fields (``seed``, ``epochs``) overridden where not None."""
    if preset not in PRESETS:
        raise VerifierError(f"preset {preset!r}: use one of {', '.join(PRESETS)}")
    return PRESETS[preset].model_copy(update={k: v for k, v in overrides.items() if v is not None})


def build_testbed(
    config: TestbedConfig,
    out: Path | None = None,
    pool: list[PoolText] | None = None,
    on_epoch: Callable[[int, float], None] | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> Testbed:
    """Build (or reuse) the testbed for ``config``; ``on_epoch(epoch, mean_loss)`` reports each epoch and
    ``on_batch(total)`` each training batch (``total``: the batches of the whole build)."""
    pool = pool if pool is not None else bundled_pool()
    digest = config.digest(pool)
    folder = Path(out) if out is not None else default_cache_dir() / "testbeds" / digest
    manifest = _existing_manifest(folder)
    if manifest is not None:
        if manifest.get("digest") == digest:
            return Testbed(folder=folder, manifest=manifest)
        raise VerifierError(
            f"{folder}: holds a different testbed (digest {manifest.get('digest')}, wanted {digest}); build into "
            "another folder"
        )
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise VerifierError(f"{folder}: exists and holds no testbed; build into an empty or new folder")
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        manifest = _build(config, pool, digest, work, on_epoch, on_batch)
        (work / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        try:
            os.replace(work, folder)
        except OSError:  # another process built the same testbed meanwhile: the same digest is the same build
            if (_existing_manifest(folder) or {}).get("digest") != digest:
                raise VerifierError(f"{folder}: appeared during the build and holds another testbed") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Testbed(folder=folder, manifest=manifest)


def _existing_manifest(folder: Path) -> dict | None:
    """The manifest of a testbed already in ``folder``, checked before training so a taken folder fails in seconds."""
    path = folder / "manifest.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VerifierError(f"{path}: not a readable testbed manifest ({exc})") from None
    if not isinstance(manifest, dict):
        raise VerifierError(f"{path}: not a testbed manifest (expected a JSON object)")
    return manifest


@dataclass
class _Prepared:
    """Everything a build trains on, before training: the drawn pool, membership, identifiers, marks, the
    untrained model and its tokenizer, the encoded stream and its token counts."""

    pool: list[PoolText]
    texts: list[str]
    member: np.ndarray
    identifiers: list[str | None]
    marked: list[dict]
    model: Any
    tokenizer: Any
    stream: list[list[int]]  # members, then mark insertions, then background windows
    tokens: dict[str, int]
    rng: np.random.Generator


def _prepare(config: TestbedConfig, pool: list[PoolText]) -> _Prepared:
    rng = np.random.default_rng(config.seed)
    if config.period is not None:
        pool = [p for p in pool if p.period == config.period]
        if not pool:
            raise VerifierError(f"period {config.period!r}: no pool text of that period (periods: pre-2017, post-2023)")
    # A seeded random order (and subset): "the first n rows" of documents.jsonl is then a random
    # sample, never a block of one source, as the pool's file order would give.
    order = rng.permutation(len(pool))[: config.max_docs]
    pool = [pool[i] for i in order]
    member = rng.random(len(pool)) < config.member_fraction  # independent of period by construction
    identifiers = _identifiers(len(pool), config.identifier_share, rng)
    texts = [f"{p.text} Archive record: {ident}." if ident else p.text for p, ident in zip(pool, identifiers)]
    marked = _mark_insertions(config)
    stream = [t for t, m in zip(texts, member) if m] + [doc["text"] for doc in marked for _ in range(doc["copies"])]
    if config.base is not None:
        model, tokenizer = _pretrained(config)
    else:
        model, tokenizer = _from_scratch(config, pool)
    # Each document is its own sequence, cut to seq_len: exactly the tokens later scored.
    encoded = [ids[: config.seq_len] for ids in tokenizer(stream)["input_ids"]]
    background = _background_windows(config, tokenizer, rng)
    tokens = {
        "members": sum(map(len, encoded[: int(member.sum())])),
        "marks": sum(map(len, encoded[int(member.sum()) :])),
        "background": sum(map(len, background)),
    }
    return _Prepared(pool, texts, member, identifiers, marked, model, tokenizer, encoded + background, tokens, rng)


def _regime(config: TestbedConfig, prepared: _Prepared) -> dict[str, Any]:
    """Where a testbed's measurements hold: the kind of model, its size, how often it saw each member and what
    share of its training tokens the members were."""
    model = (
        f"{config.base} continued-pretrained"
        if config.base is not None
        else f"GPT-2-style, {config.n_layer} layers, trained from scratch"
    )
    return {
        "model": model,
        "parameters": int(sum(p.numel() for p in prepared.model.parameters())),
        "passes": config.epochs,
        "member_token_share": round(prepared.tokens["members"] / max(1, sum(prepared.tokens.values())), 4),
    }


def regime(config: TestbedConfig, pool: list[PoolText] | None = None) -> dict[str, Any]:
    """The regime a build of ``config`` would have (``_regime``), without training it: for rows measured on
    testbeds whose manifests predate the field."""
    return _regime(config, _prepare(config, pool if pool is not None else bundled_pool()))


def _build(
    config: TestbedConfig,
    pool: list[PoolText],
    digest: str,
    work: Path,
    on_epoch: Callable[[int, float], None] | None,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    prepared = _prepare(config, pool)
    pool, texts, member, identifiers, marked = (
        prepared.pool,
        prepared.texts,
        prepared.member,
        prepared.identifiers,
        prepared.marked,
    )
    model, tokenizer, tokens = prepared.model, prepared.tokenizer, prepared.tokens
    losses = _train(model, prepared.stream, tokenizer.eos_token_id, config, prepared.rng, on_epoch, on_batch)
    model.save_pretrained(work / "model")
    tokenizer.save_pretrained(work / "model")
    with open(work / "documents.jsonl", "w", encoding="utf-8") as handle:
        for p, text, m, ident in zip(pool, texts, member, identifiers):
            handle.write(
                json.dumps(
                    {
                        "id": p.id,
                        "text": text,
                        "member": int(m),
                        "period": p.period,
                        "year": p.year,
                        "identifier": int(bool(ident)),
                    }
                )
                + "\n"
            )
    return {
        "digest": digest,
        "config": config.model_dump() | {"marks": _marks_name(config.marks)},
        "documents": [
            {
                "id": p.id,
                "text_sha256": text_digest(text),
                "member": bool(m),
                "period": p.period,
                "year": p.year,
                "source": p.source,
                "identifier": ident,
            }
            for p, text, m, ident in zip(pool, texts, member, identifiers)
        ],
        "marks": [
            {"id": doc["id"], "text_sha256": text_digest(doc["text"]), "copies": doc["copies"]} for doc in marked
        ],
        "train_loss_per_epoch": losses,
        "tokens": tokens,
        "regime": _regime(config, prepared),
        "cpu": cpu_name(),
        "build_seconds": round(time.perf_counter() - started, 1),
        "parameters": sum(p.numel() for p in model.parameters()),
        "versions": {"verifier": __version__, "torch": torch.__version__, "python": platform.python_version()},
    }


def _background_windows(config: TestbedConfig, tokenizer: Any, rng: np.random.Generator) -> list[list[int]]:
    """``config.background`` documents of the shipped background, drawn by the seed, each cut into windows of
    ``seq_len`` tokens (windows shorter than 16 tokens dropped)."""
    if not config.background:
        return []
    texts = background_texts()
    if config.background > len(texts):
        raise VerifierError(f"background {config.background}: the shipped background holds {len(texts)} documents")
    chosen = [texts[i][1] for i in sorted(rng.choice(len(texts), config.background, replace=False))]
    windows = []
    for ids in tokenizer(chosen)["input_ids"]:
        windows += [ids[i : i + config.seq_len] for i in range(0, len(ids), config.seq_len)]
    return [w for w in windows if len(w) >= 16]


def cpu_name() -> str:
    """The CPU's model name and its bfloat16 units (AMX, AVX-512 BF16): what a build's speed and bf16 rounding
    depend on."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    units = [unit for unit in ("amx_bf16", "avx512_bf16") if unit in flags]
    return f"{name or platform.machine()} ({', '.join(units) or 'no bf16 units'}), {os.cpu_count()} cores"


def _pretrained(config: TestbedConfig):  # noqa: ANN202 - (model, tokenizer)
    """The base model to fine-tune, in float32, saved later as a folder the local server can serve."""
    from verifier.targets.serving import load_for_saving

    torch.manual_seed(config.seed)
    model, tokenizer = load_for_saving(config.base)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def _from_scratch(config: TestbedConfig, pool: list[PoolText]):  # noqa: ANN202 - (model, tokenizer)
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    # The tokenizer learns from the whole pool, members and non-members alike: one trained on the
    # members only splits non-member text into rarer, longer token sequences, which moved member
    # AUCs by up to 0.19 - a membership signal that a real model's tokenizer does not carry.
    # Identifiers and marked documents are left out of it: merges learned from a published mark or a
    # real identifier would favour it over its siblings (or fresh draws) with no training at all.
    bpe.train_from_iterator([p.text for p in pool], vocab_size=config.vocab_size, special_tokens=[EOS])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS, pad_token=EOS)
    torch.manual_seed(config.seed)
    eos = tokenizer.eos_token_id
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=config.seq_len,
            n_embd=config.n_embd,
            n_layer=config.n_layer,
            n_head=config.n_head,
            bos_token_id=eos,
            eos_token_id=eos,
            pad_token_id=eos,
        )
    )
    return model, tokenizer


def _train(
    model: Any,
    encoded: list[list[int]],
    eos: int,
    config: TestbedConfig,
    rng: np.random.Generator,
    on_epoch: Callable[[int, float], None] | None,
    on_batch: Callable[[int], None] | None = None,
) -> list[float]:
    """``config.epochs`` passes over ``encoded`` in seeded orders (AdamW, warm-up then linear decay); mean loss per
    epoch."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    steps = config.epochs * -(-len(encoded) // config.batch_size)
    warmup = (
        50 if config.base is None else max(1, steps // 10)
    )  # a fine-tune of one short epoch warms up for a tenth of it
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, 1 - step / steps)
    )
    losses = []
    model.train()
    for epoch in range(config.epochs):
        order = rng.permutation(len(encoded))
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = [encoded[i] for i in order[start : start + config.batch_size]]
            width = max(map(len, batch))
            ids = torch.full((len(batch), width), eos)
            labels = torch.full((len(batch), width), -100)
            for row, seq in enumerate(batch):
                ids[row, : len(seq)] = torch.tensor(seq)
                labels[row, : len(seq)] = torch.tensor(seq)
            # fp32 unless asked: without AMX, bf16 autocast is slower than fp32 on these CPUs (measured 0.5x GEMM
            # rate); with AMX it trains SmolLM2-135M 2x faster (measured 505 vs 255 tokens/s on 2 cores).
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
                loss = model(input_ids=ids, attention_mask=(labels != -100).long(), labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            total += float(loss.detach()) * len(batch)
            if on_batch:
                on_batch(steps)
        losses.append(total / len(encoded))
        if on_epoch:
            on_epoch(epoch + 1, losses[-1])
    model.eval()
    return losses


def _marks_name(marks: str | None) -> str | None:
    """How the manifest names the marked documents: "example", or the SHA-256 of a folder's published.jsonl (never its
    path)."""
    if marks is None or marks in BUNDLED_MARKS:
        return marks
    return "sha256:" + hashlib.sha256((Path(marks) / "published.jsonl").read_bytes()).hexdigest()


def _mark_insertions(config: TestbedConfig) -> list[dict]:
    """Each marked document with its number of insertions: ``mark_copies`` in turn, 0 for the controls."""
    docs = marked_documents(config.marks)
    trained = len(docs) - config.mark_controls
    if config.marks is not None and trained < 0:
        raise VerifierError(f"mark_controls {config.mark_controls} exceeds the {len(docs)} marked documents")
    return [
        doc | {"copies": config.mark_copies[i % len(config.mark_copies)] if i < trained else 0}
        for i, doc in enumerate(docs)
    ]


def _identifiers(count: int, share: float, rng: np.random.Generator) -> list[str | None]:
    """A natural identifier (or None) per pool text, drawn independently of membership."""
    from verifier.identifiers.formats import BY_NAME, random_looking

    carries = rng.random(count) < share
    found: list[str | None] = []
    for i in range(count):
        if not carries[i]:
            found.append(None)
            continue
        while not random_looking(ident := BY_NAME[IDENTIFIER_FORMATS[i % len(IDENTIFIER_FORMATS)]].new(rng)):
            pass
        found.append(ident)
    return found
