"""Marks and natural identifiers on ground-truth testbeds: detection by insertion count, false positives.

For each of ``--builds`` independent draws (a fresh secret seed for the marks, a fresh testbed
seed for the membership draw and training):
1. 120 arXiv carriers are marked with ``verifier marks make``'s library call: 16 canaries (8
   random words), 16 copyright traps (25 random words) and 16 rephrasings (offline rephraser)
   to be inserted, and 24 of each kind never inserted (the control); 19 siblings each.
2. A ``small``-preset testbed is trained with the inserted marked documents 1, 4, 16 or 64 times
   (4 per kind and count) and 30% of its pool texts carrying a natural identifier.
3. Each registered mark is ranked among its siblings (``marks.evaluate``); a mark is detected
   when its exact p-value is at most 0.05 (ranked first of 20).
4. The natural identifiers in the members' texts and in the non-members' texts are tested
   against 99 fresh draws each, combined by Fisher's method.
Rates carry a Wilson 95% CI over all marks of all builds and their spread (min-max) across builds.

With ``--preset pretrain-like`` the builds are instead the pretraining-like testbeds (SmolLM2-135M
continued-pretrained one pass among background text; seeds 0..builds-1, cached), whose training
stream holds the bundled example's 24 marked documents 1, 4 and 16 times in turn: each registered
mark is ranked among its 19 siblings (its identifiers: ``identifiers_null.py --testbed-preset pretrain-like``).

Usage: python benchmarks/marks.py [--builds 3] [--epochs 8] [--preset pretrain-like]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from verifier.boundary.resources import resource
from verifier.dataset_inference.power import wilson
from verifier.identifiers.run import test_identifiers
from verifier.marks.generators import MarkSpec
from verifier.marks.make import PUBLISHED, REGISTRATION, SECRETS, make_marks, write_marks
from verifier.marks.run import test_registered
from verifier.scoring.table import TargetScorer
from verifier.stats.rank_trials import RankFinding
from verifier.targets import ScoringOptions
from verifier.targets.rephrase import OfflineRephraser
from verifier.testbed.build import PRESETS, Testbed, build_testbed
from verifier.trust.envelopes import public_pem

COUNTS = [1, 4, 16, 64]
PER_COUNT, CONTROLS, SIBLINGS, LEVEL = 4, 24, 19, 0.05
KINDS = {
    "canary": MarkSpec(kind="canary", format="words", siblings=SIBLINGS),
    "trap": MarkSpec(kind="trap", siblings=SIBLINGS),
    "rephrasing": MarkSpec(kind="rephrasing", siblings=SIBLINGS),
}


def carriers(rng: np.random.Generator, n: int) -> list[tuple[str, str]]:
    rows = [
        json.loads(line)
        for line in resource("examples", "data", "arxiv-carriers", "abstracts.jsonl").read_text().splitlines()
    ]
    rephrasable = OfflineRephraser()
    usable = [r for r in rows if _varies(rephrasable, r["text"])]
    return [(usable[i]["id"], usable[i]["text"]) for i in rng.choice(len(usable), n, replace=False)]


def _varies(rephraser: OfflineRephraser, text: str) -> bool:
    try:
        rephraser.rephrase(text, SIBLINGS + 1, 0)
        return True
    except ValueError:
        return False


def one_build(build: int, epochs: int, work: Path) -> dict:
    rng = np.random.default_rng(1000 + build)
    inserted = [kind for kind in KINDS for _ in range(len(COUNTS) * PER_COUNT)]
    controls = [kind for kind in KINDS for _ in range(CONTROLS)]
    kinds = inserted + controls
    docs = carriers(rng, len(kinds))
    key = Ed25519PrivateKey.generate()
    trust = work / "trust"
    trust.mkdir(parents=True, exist_ok=True)
    (trust / f"build{build}.pem").write_bytes(public_pem(key.public_key()))
    folder = work / f"marks{build}"
    write_marks(
        make_marks(
            docs,
            [KINDS[k] for k in kinds],
            f"bench-{build}",
            seed=int(rng.integers(2**62)),
            rephraser=OfflineRephraser(),
        ),
        folder,
        key,
    )
    copies = {doc_id: (COUNTS[i % len(COUNTS)] if i < len(inserted) else 0) for i, (doc_id, _) in enumerate(docs)}
    config = PRESETS["small"].model_copy(
        update={
            "seed": build,
            "epochs": epochs,
            "marks": str(folder),
            "mark_copies": COUNTS,
            "mark_controls": len(controls),
        }
    )
    started = time.perf_counter()
    testbed = build_testbed(config)
    built = time.perf_counter() - started
    assert {m["id"]: m["copies"] for m in testbed.manifest["marks"]} == copies
    scorer = TargetScorer(str(testbed.model_dir), ScoringOptions(max_tokens=config.seq_len), work / "cache", None)
    started = time.perf_counter()
    finding, marks = _ranked(scorer, folder, folder / SECRETS, trust, copies)
    identifiers = _identifiers(scorer, testbed, work, build)
    return {
        "build": build,
        "build_seconds": round(built, 1),
        "test_seconds": round(time.perf_counter() - started, 1),
        "marks": marks,
        "identifiers": identifiers,
        "excluded": finding.excluded,
    }


def example_on(build: int, work: Path) -> dict:
    """The bundled example's marks and the natural identifiers, tested on pretraining-like testbed ``build``."""
    folder = resource("examples", "data", "marks")
    trust = work / "trust"
    trust.mkdir(parents=True, exist_ok=True)
    (trust / "example.pem").write_bytes((folder / "registrant.pub").read_bytes())
    config = PRESETS["pretrain-like"].model_copy(update={"seed": build})
    started = time.perf_counter()
    testbed = build_testbed(config)
    built = time.perf_counter() - started
    copies = {m["id"]: m["copies"] for m in testbed.manifest["marks"]}
    scorer = TargetScorer(str(testbed.model_dir), ScoringOptions(max_tokens=config.seq_len), work / "cache", None)
    started = time.perf_counter()
    finding, marks = _ranked(scorer, folder, folder / "siblings.json", trust, copies)  # published beside
    return {
        "build": build,
        "build_seconds": testbed.manifest["build_seconds"] if built < 60 else round(built, 1),
        "test_seconds": round(time.perf_counter() - started, 1),
        "marks": marks,
        "identifiers": {},  # 600 identifiers x 100 draws a build: benchmarks/identifiers_null.py measures them there
        "excluded": finding.excluded,
    }


def _ranked(
    scorer: TargetScorer, folder: Path, secrets: Path, trust: Path, copies: dict[str, int]
) -> tuple[RankFinding, list[dict]]:
    """Each registered mark of ``folder`` ranked among its siblings, with its kind, insertions and exact p-value."""
    finding = test_registered(
        scorer,
        folder / REGISTRATION,
        secrets,
        folder / PUBLISHED,
        date.today() + timedelta(days=1),
        None,
        0.05,
        "fisher",
        LEVEL,
        32,
        0,
        trust_dir=trust,
    )
    documents = {m["id"]: m["document"] for m in json.loads(_payload(folder / REGISTRATION))["predicate"]["marks"]}
    return finding, [{"kind": r.kind, "copies": copies[documents[r.id]], "p": r.p_value} for r in finding.results]


def _identifiers(scorer: TargetScorer, testbed: Testbed, work: Path, build: int) -> dict:
    """The natural identifiers of a testbed's members and of its non-members, each set tested on its own."""
    rows = [json.loads(line) for line in testbed.documents.read_text().splitlines()]
    found = {}
    for member in (1, 0):
        path = work / f"ids{build}-{member}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["member"] == member and r["identifier"]))
        result = test_identifiers(scorer, path, 99, 0.05, "fisher", LEVEL, 32, 500, build)  # seed: planning only
        found["members" if member else "non-members"] = {
            "n": result.n_marks,
            "combined_p": result.p_value,
            "detected": sum(r.p_value <= LEVEL for r in result.results),
            "effect": result.effect_size,
        }
    return found


def _payload(path: Path) -> bytes:
    import base64

    return base64.b64decode(json.loads(path.read_text())["payload"])


def rate_line(label: str, hits_per_build: list[tuple[int, int]]) -> str:
    hits, total = sum(h for h, _ in hits_per_build), sum(t for _, t in hits_per_build)
    rate = wilson(hits, total)
    shares = [h / t for h, t in hits_per_build if t]
    return (
        f"| {label} | {hits}/{total} | {rate.value:.3f} [{rate.ci_low:.3f}, {rate.ci_high:.3f}] | "
        f"{min(shares):.3f}-{max(shares):.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--preset", default="small", choices=["small", "pretrain-like"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            one_build(b, args.epochs, Path(tmp)) if args.preset == "small" else example_on(b, Path(tmp))
            for b in range(args.builds)
        ]
    print(
        f"# marks benchmark: {args.builds} builds, {args.preset} preset"
        f"{f', {args.epochs} epochs' if args.preset == 'small' else ' (one pass)'}, {SIBLINGS} siblings per mark, "
        f"detected = exact p <= {LEVEL}"
    )
    print(
        f"build seconds: {[r['build_seconds'] for r in results]}; test seconds: {[r['test_seconds'] for r in results]}"
    )
    print("\n| marks | detected / marks | rate [Wilson 95% CI] | spread across builds |\n|---|---|---|---|")
    per = defaultdict(list)
    for r in results:
        groups = defaultdict(lambda: [0, 0])
        for m in r["marks"]:
            for key in ((m["kind"], m["copies"]), ("all kinds", m["copies"])):
                groups[key][0] += m["p"] <= LEVEL
                groups[key][1] += 1
        for key, value in groups.items():
            per[key].append(tuple(value))
    for kind in [*KINDS, "all kinds"]:
        for count in [*COUNTS, 0]:
            if (kind, count) in per:
                label = f"{kind}, inserted {count}x" if count else f"{kind}, never inserted (control: FPR)"
                print(rate_line(label, per[(kind, count)]))
    combined = defaultdict(list)
    for r in results:
        for kind in KINDS:
            ps = [m["p"] for m in r["marks"] if m["kind"] == kind and m["copies"] == 0]
            from verifier.stats.rank import combine

            combined[kind].append(combine(ps, "fisher"))
    print(
        "\ncontrol marks combined per build (Fisher, H0 true): "
        + "; ".join(f"{k}: {', '.join(f'{p:.3g}' for p in v)}" for k, v in combined.items())
    )
    print(
        "\n| identifiers | build | identifiers tested | detected at 0.05 | combined p (Fisher) | effect size "
        "|\n|---|---|---|---|---|---|"
    )
    for r in results:
        for who, v in r["identifiers"].items():
            print(f"| {who} | {r['build']} | {v['n']} | {v['detected']} | {v['combined_p']:.3g} | {v['effect']:.2f} |")
    if any(r["excluded"] for r in results):
        print("excluded:", [r["excluded"] for r in results])


if __name__ == "__main__":
    main()
