"""Natural identifiers under the null and the alternative: simulated audits on a ground-truth testbed.

The identifiers route ranks each identifier in its context among fresh draws of its format; under
H0 (the model never saw the text) the rank is uniform and an audit's Fisher-combined p-value is
below alpha at most alpha of the time - for identifiers with internal structure too, which the
route refuses when a part of them predicts another (a model could continue them from their first
copy, trained or not). This measures:

1. null, unstructured: fresh uniform identifiers (hex digests, UUIDs, short links) placed in the
   testbed's non-member texts, which the model never saw; SUPPORTED rate over ``--audits``
   audits, with a Wilson interval and the spread across five independent batches;
2. null, structured: identifiers built from a repeated or mirrored block (the outside attack that
   gave p = 2e-9): how many the route refuses, and the SUPPORTED rate of what is left;
3. alternative: the identifiers the testbed's members carry (the model was trained on them):
   detection rate over audits of the same size;
4. with ``--smollm2``: the structured attack on SmolLM2-135M (which certainly never saw these
   strings), with the self-predictability filter on and, to show what it prevents, off;
5. with ``--reveal``: the attack of issue 40 on SmolLM2-135M - fresh 40-hex hashes after a git
   "short object ID is ambiguous" message that shows their first 2-6 characters (runs of 3 or more
   are kept in every fresh draw, 2 are not): the SUPPORTED rate per revealed length, with the
   conditioning on and, on a share of the audits, off (what it prevents); and 2015-style bit.ly links
   (paths beginning with 1) against draws that keep their first character;
6. with ``--testbed-preset pretrain-like``: sections 1-3 on that testbed (SmolLM2 continued-pretrained,
   members seen once) instead of the small one.

    python benchmarks/identifiers_null.py --audits 200 [--reveal 250] [--testbed-preset pretrain-like]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from verifier.dataset_inference.power import wilson
from verifier.identifiers import formats
from verifier.identifiers.trials import identifier_trials
from verifier.scoring.table import TargetScorer
from verifier.stats.rank_trials import run_rank_tests
from verifier.targets import ScoringOptions
from verifier.testbed.build import PRESETS, build_testbed
from verifier.validation import record

PER_AUDIT, SAMPLES, ALPHA, LEVEL = 5, 19, 0.05, 0.05
NULL = "H0: the model was not trained on text containing these identifiers"


def structured(rng: np.random.Generator, kind: int) -> str:
    """An identifier whose parts predict each other: a repeated 6-character block, or a mirrored one."""
    block = "".join("0123456789abcdef"[i] for i in rng.integers(0, 16, 6))
    if kind % 2:
        return (block + block[::-1]) * 3 + block[:4]
    return block * 6 + block[:4]


def fresh(rng: np.random.Generator, i: int) -> str:
    fmt = formats.FORMATS[i % 3]  # uuid4, hex_digest, short_url
    while not formats.random_looking(ident := fmt.new(rng)):
        pass
    return ident


def placed(contexts: list[str], idents: list[str]) -> list[str]:
    """Identifiers placed after the last 30 words of texts the model never saw."""
    return [f"{' '.join(c.split()[-30:])} The reference is {ident} and" for c, ident in zip(contexts, idents)]


def audit(scorer: TargetScorer, texts: list[str]) -> tuple[float | None, int]:
    """One audit of the identifiers in ``texts``: (combined p or None when none is tested, tested)."""
    trials, _ = identifier_trials(texts, SAMPLES, 32, 100)
    if not trials:
        return None, 0
    finding = run_rank_tests(trials, scorer, NULL, "fisher", ALPHA, LEVEL, 0.8, 0)
    return finding.p_value, finding.n_marks


ROWS: list[dict] = []  # what --record writes


def rate(label: str, outcomes: list[bool], batches: int = 5, keep: dict | None = None) -> str:
    """A table line; ``keep`` (quantity, scenario and optionally regime) also records it."""
    r = wilson(sum(outcomes), len(outcomes))
    if keep is not None:
        ROWS.append(
            {"route": "identifiers", "n": PER_AUDIT, "trials": len(outcomes), "builds": 1}
            | keep
            | {"value": round(r.value, 4), "ci": (round(r.ci_low, 4), round(r.ci_high, 4))}
        )
    parts = np.array_split(np.array(outcomes, dtype=float), batches)
    spread = np.std([p.mean() for p in parts], ddof=1) if len(outcomes) >= batches else float("nan")
    return (
        f"| {label} | {len(outcomes)} | {sum(outcomes)} | {r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] | "
        f"{spread:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=200)
    parser.add_argument(
        "--smollm2", type=int, default=0, help="audits of the structured attack on SmolLM2-135M (0: skip)"
    )
    parser.add_argument("--testbed", type=Path, default=None, help="a built testbed folder to reuse")
    parser.add_argument("--testbed-preset", default="small", choices=["small", "pretrain-like"])
    parser.add_argument(
        "--reveal", type=int, default=0, help="audits of the revealing-context attack on SmolLM2-135M (0: skip)"
    )
    parser.add_argument("--skip-testbed", action="store_true", help="only section 5 (with --reveal)")
    parser.add_argument("--record", action="store_true", help="write the rows to the method-validation table")
    parser.add_argument("--work", type=Path, default=None, help="a folder for the score cache (reuse a run's scores)")
    parser.add_argument(
        "--reveal-model", default="smollm2-135m", help="the model of section 5: a SPEC or a testbed's model folder"
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="identifiers-null-"))
    if args.reveal:
        revealing(args.reveal, work, args.reveal_model)
    if not args.skip_testbed:
        testbed_sections(args, work)
    if args.record:
        parts = ([] if args.skip_testbed else [args.testbed_preset]) + (["reveal"] if args.reveal else [])
        record(
            "-".join(["identifiers_null", *parts]),
            ROWS,
            ([args.reveal_model] if args.reveal else []) + ([] if args.skip_testbed else [args.testbed_preset]),
            "python benchmarks/identifiers_null.py " + " ".join(sys.argv[1:]),
        )
        print("\nrecorded in verifier/validation/table.json", file=sys.stderr)


def testbed_sections(args: argparse.Namespace, work: Path) -> None:
    """Sections 1-4 on the chosen testbed."""
    started = time.perf_counter()
    config = PRESETS[args.testbed_preset]
    testbed = build_testbed(config, out=args.testbed) if args.testbed else build_testbed(config)
    rows = [json.loads(line) for line in testbed.documents.read_text().splitlines()]
    outside = [r["text"] for r in rows if r["member"] == 0]
    members = [(r["text"], r["identifier"]) for r in rows if r["member"] == 1 and r["identifier"]]
    scorer = TargetScorer(str(testbed.model_dir), ScoringOptions(max_tokens=config.seq_len), work / "cache", None)
    print(
        f"testbed {args.testbed_preset!r} ({testbed.folder.name}) built in "
        f"{time.perf_counter() - started:.0f} s; {len(outside)} non-member texts, "
        f"{len(members)} member identifiers; {PER_AUDIT} identifiers an audit, {SAMPLES} fresh draws each, Fisher, "
        f"alpha {ALPHA}\n"
    )
    print("| audits | n | SUPPORTED | rate [Wilson 95%] | spread across 5 batches (sd) |\n|---|---|---|---|---|")
    rng = np.random.default_rng(2026)
    plans, refused, offered = [], 0, 0
    for a in range(args.audits):
        contexts = [outside[int(i)] for i in rng.choice(len(outside), PER_AUDIT, replace=False)]
        built = [structured(rng, i) for i in range(PER_AUDIT)]
        refused += sum(not formats.random_looking(x) for x in built)
        offered += len(built)
        plans.append(
            (placed(contexts, [fresh(rng, a * PER_AUDIT + i) for i in range(PER_AUDIT)]), placed(contexts, built))
        )
    # Every text of every audit scored in one pass into the cache; the audits then read it.
    every = [
        text
        for plan in plans
        for texts in plan
        for t in identifier_trials(texts, SAMPLES, 32, 100)[0]
        for text in [t.published, *t.siblings]
    ]
    scorer("warm", list(dict.fromkeys(every)), "log_likelihood")
    null, structured_null = [], []
    for unstructured_texts, structured_texts in plans:
        p, _ = audit(scorer, unstructured_texts)
        null.append(p is not None and p <= ALPHA)
        p, _ = audit(
            scorer, structured_texts
        )  # what is tested: the contexts' own natural identifiers, never trained on
        structured_null.append(p is not None and p <= ALPHA)
    where = {"regime": testbed.manifest["regime"]} if "regime" in testbed.manifest else {}
    scenario = f"fresh identifiers in {args.testbed_preset} testbed texts the model never saw"
    print(
        rate(
            "null: fresh identifiers in texts the model never saw",
            null,
            keep={"quantity": "false verdict rate (identifiers never trained on)", "scenario": scenario} | where,
        )
    )
    print(rate("null: structured identifiers (repeated or mirrored blocks)", structured_null))
    positive = []
    for _ in range(max(20, args.audits // 10)):
        chosen = [members[int(i)] for i in rng.choice(len(members), min(PER_AUDIT, len(members)), replace=False)]
        p, _ = audit(scorer, [t for t, _ in chosen])  # the member texts as trained
        positive.append(p is not None and p <= ALPHA)
    print(
        rate(
            "alternative: identifiers the model was trained on (members)",
            positive,
            keep={
                "quantity": "power (identifiers trained on)",
                "scenario": f"{args.testbed_preset} testbed members' identifiers",
            }
            | where,
        )
    )
    p, n = audit(scorer, [t for t, _ in members])
    print(f"\nalternative, every member identifier in one audit: {n} tested, Fisher p = {p:.2g}")
    print(f"structured identifiers refused as self-predictable: {refused} of {offered}")
    if args.smollm2:
        smol = TargetScorer("smollm2-135m", ScoringOptions(max_tokens=128), work / "cache", None)
        text = [r["text"] for r in rows][: args.smollm2]
        for label, filtered in (("filter on", True), ("filter off", False)):
            original = formats._self_predictable
            if not filtered:
                formats._self_predictable = lambda t: False  # type: ignore[assignment]
            try:
                ps = [audit(smol, placed([t], [structured(rng, i)]))[0] for i, t in enumerate(text)]
            finally:
                formats._self_predictable = original  # type: ignore[assignment]
            scored = [p for p in ps if p is not None]
            print(
                f"SmolLM2-135M, structured identifiers, {label}: {len(scored)} of {len(ps)} tested, "
                f"median p {np.median(scored) if scored else float('nan'):.3g}, p <= {ALPHA}: "
                f"{sum(p <= ALPHA for p in scored)}"
            )


def git_message(before: str, ident: str, shown: int, rng: np.random.Generator) -> str:
    """Real text, then git's answer to an ambiguous short id showing ``shown`` characters of ``ident``, then
    ``ident`` in full (the outside attack's notes)."""
    prefix = ident[:shown]
    others = ["".join("0123456789abcdef"[i] for i in rng.integers(0, 16, 2)) for _ in range(2)]
    return (
        f"{' '.join(before.split()[-6:])}\n$ git show {prefix}\nerror: short object ID {prefix} is ambiguous\n"
        f"hint: The candidates are:\nhint:   {prefix}{others[0]} commit 2026-12-06 - fix the parser\n"
        f"hint:   {prefix}{others[1]} tree\nThe fix landed as {ident} and"
    )


def revealing(audits: int, work: Path, model: str = "smollm2-135m") -> None:
    """Section 5: the revealing-context attack and 2015-style short links on ``model`` (SmolLM2-135M, or a testbed's
    model folder)."""
    from verifier.testbed.pool import bundled_pool

    smol = TargetScorer(model, ScoringOptions(max_tokens=160), work / "cache", None)
    texts = [p.text for p in bundled_pool()]
    rng = np.random.default_rng(40)
    lengths = (3, 4, 5, 6, 2)  # 2 last: it is measured, not needed for the rows
    plans: dict[int, list[list[str]]] = {k: [] for k in lengths}
    for a in range(audits):
        k = lengths[a % len(lengths)]
        idents = [fresh(rng, 1) for _ in range(PER_AUDIT)]  # 40-hex hashes that pass the filter
        plans[k].append([git_message(texts[int(rng.integers(len(texts)))], x, k, rng) for x in idents])
    links = []
    for _ in range(max(10, audits // 10)):
        paths = ["1" + "".join(formats.ALNUM[i] for i in rng.integers(0, 62, 6)) for _ in range(PER_AUDIT)]
        links.append(placed([texts[int(rng.integers(len(texts)))] for _ in paths], [f"bit.ly/{p}" for p in paths]))
    started = time.perf_counter()
    # Every text of every audit scored in one pass into the cache (large batches); the audits then read it.
    texts_needed = [
        text
        for plan in [*sum(plans.values(), []), *links]
        for t in identifier_trials(plan, SAMPLES, 32, 100)[0]
        for text in [t.published, *t.siblings]
    ]
    smol("warm", list(dict.fromkeys(texts_needed)), "log_likelihood")
    print(
        f"== 5. {Path(model).name}: contexts revealing a fresh hash's first characters; {PER_AUDIT} identifiers an "
        f"audit, {SAMPLES} fresh draws each, Fisher, alpha {ALPHA}\n"
    )
    print("| audits | n | SUPPORTED | rate [Wilson 95%] | spread across 5 batches (sd) |\n|---|---|---|---|---|")
    every: list[bool] = []
    for k in lengths:
        outcomes = [(p := audit(smol, plan)[0]) is not None and p <= ALPHA for plan in plans[k]]
        every += outcomes if k >= formats.REVEALED_RUN else []
        label = f"{k} characters revealed{' (not kept: shorter than a run)' if k < 3 else ''}"
        print(rate(label, outcomes), flush=True)
    print(
        rate(
            f"all with {formats.REVEALED_RUN}-6 characters revealed",
            every,
            keep={
                "quantity": "false verdict rate (identifiers never trained on)",
                "scenario": "fresh git hashes after an ambiguous-id message revealing 3-6 characters, "
                f"{Path(model).name}",
            },
        )
    )
    original = formats.revealed
    formats.revealed = lambda context, identifier: frozenset()  # type: ignore[assignment]
    try:
        off = [
            (p := audit(smol, plan)[0]) is not None and p <= ALPHA
            for k in lengths
            if k >= formats.REVEALED_RUN
            for plan in plans[k][: max(2, len(plans[k]) // 10)]
        ]
    finally:
        formats.revealed = original  # type: ignore[assignment]
    print(rate("3-6 revealed, conditioning off (what it prevents)", off))
    print(
        rate(
            "2015-style bit.ly links (paths beginning with 1), first character kept",
            [(p := audit(smol, plan)[0]) is not None and p <= ALPHA for plan in links],
        )
    )
    print(f"\n({time.perf_counter() - started:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
