"""Output-only marks (cue/reply, co-occurrence): false detections where nothing was trained on, and detection
through answers-only APIs on a model that was.

1. **The exact null, simulated** (no model): ``--simulated`` marks per kind, 99 siblings each, against the
   worst case H0 allows - a model that knows every candidate but not which was published, opening each of
   8 generations with one drawn uniformly: the share of marks at p <= k/100 against k/100, and Fisher's
   combination over 12 marks (one registration) at alpha 0.05.
2. **Models that never saw the marks**: SmolLM2-135M-Instruct (the shipped weights, never trained on marks
   drawn today) is prompted with ``--null-cues`` fresh cues, each after 32 words of a real text (an arXiv
   abstract or book opening of the bundled background, at a random word: the route's default ``prompt:
   context``), 8 generations of up to 48 tokens each at temperature 1.0 (the policy's defaults), through the
   route's own sampler (the model in bf16), with the 16 control cues but not each prompt's own context
   controls (those only set more marks aside, so the false detections counted here bound the route's); each cue's
   generations score one cue/reply pool and one co-occurrence pool (99 siblings each, drawn independently:
   the generations do not depend on either). A challenge is one generation for one cue: 1,250 cues are 10,000 challenges
   per kind. False detections per mark at 0.05 and 0.01, and per registration of 12 marks (Fisher).
3. **The ``outputs`` testbed through answers-only APIs** (``--testbed``): SmolLM2-135M-Instruct
   continued-pretrained once among background text with the bundled output-only marks
   (``verifier/examples/data/marks-output``: 12 cue/reply, 12 co-occurrence, 99 siblings) inserted 1, 4
   and 16 times in turn. The testbed is served by ``transformers serve`` (an answers-only API) and by a
   real vLLM server (``make vllm``) with the claim's ``logprobs: false``; every request body is checked
   for log-prob fields (none may be sent). Per kind and copies: the marks at p <= 0.05 and the combined
   p-value (Fisher).

Usage: ``python benchmarks/marks_output.py [--simulated 2000] [--null-cues 1250] [--testbed]
[--engines transformers,vllm] [--record]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from verifier.boundary.resources import resource
from verifier.dataset_inference.power import wilson
from verifier.marks.generators import MarkSpec, draw_cue, draw_distinct
from verifier.marks.make import PUBLISHED, REGISTRATION
from verifier.marks.replies import Asked, Protocol, answer_scorer, control_prompts, sampler, shown_by_prompt
from verifier.marks.run import test_registered
from verifier.stats.rank import combine, rank_p_value
from verifier.stats.rank_trials import Trial
from verifier.targets import ScoreCache
from verifier.testbed.pool import background_texts
from verifier.validation import record

SIBLINGS = 99
CONTEXT_WORDS = 32  # the route's default context_words
PER_REGISTRATION = 12
KINDS = {
    "cue_reply": MarkSpec(kind="cue_reply", siblings=SIBLINGS),
    "cooccurrence": MarkSpec(kind="cooccurrence", siblings=SIBLINGS),
}
ROWS: list[dict] = []


def draw_trial(kind: str, rng: np.random.Generator, prompt: str, i: int) -> Trial:
    pool = draw_distinct(KINDS[kind], rng, SIBLINGS + 1)
    chosen = int(rng.integers(0, SIBLINGS + 1))
    return Trial(str(i), kind, "outputs", pool[chosen], pool[:chosen] + pool[chosen + 1 :], prompt=prompt)


def p_values(trials: list[Trial], ask, controls: list[str] | None = None, asked: Asked | None = None) -> np.ndarray:
    """Each trial's exact p-value as the route computes it (a mark set aside - its prompt holds a candidate's
    words, or a candidate came back after the control cues: 1, no evidence)."""
    scored = answer_scorer(ask, asked or Asked(), controls or [])(trials)
    return np.array(
        [1.0 if np.isnan(s) or shown_by_prompt(t) else rank_p_value(s, own) for t, (s, own) in zip(trials, scored)]
    )


def null_lines(label: str, p: np.ndarray, keep: dict | None) -> None:
    for level in (0.05, 0.01):
        r = wilson(int(np.sum(p <= level + 1e-12)), len(p))
        print(
            f"| {label} | per mark at {level} | {len(p)} | {int(np.sum(p <= level + 1e-12))} | "
            f"{r.value:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}] |"
        )
        if keep is not None and level == 0.05:
            ROWS.append(
                {
                    "route": "marks",
                    "n": 1,
                    "trials": len(p),
                    "builds": 1,
                    "value": round(r.value, 4),
                    "ci": (round(r.ci_low, 4), round(r.ci_high, 4)),
                }
                | keep
            )
    groups = [
        combine(list(p[i : i + PER_REGISTRATION]), "fisher")
        for i in range(0, len(p) - PER_REGISTRATION + 1, PER_REGISTRATION)
    ]
    if not groups:
        return
    hits = int(np.sum(np.array(groups) <= 0.05))
    r = wilson(hits, len(groups))
    print(
        f"| {label} | registration of {PER_REGISTRATION} (Fisher) at 0.05 | {len(groups)} | {hits} | "
        f"{r.value:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}] |"
    )


def simulated(count: int) -> None:
    """The worst case H0 allows: a model that knows every candidate of a mark but not which was published
    (each generation opens with one candidate drawn uniformly, written as the document would carry it)."""
    rng = np.random.default_rng(20261206)
    print(
        f"\n## 1. The exact null, simulated ({count} marks per kind; a model that knows each mark's 100 candidates but "
        "not which was published writes one, drawn uniformly, in each of 8 generations)\n"
    )
    print("| kind | test | marks | false detections | rate [Wilson 95% CI] |\n|---|---|---|---|---|")
    for kind in KINDS:
        trials = [draw_trial(kind, rng, f"{draw_cue(rng)}:", i) for i in range(count)]
        pools = {str(t.prompt): [t.published, *t.siblings] for t in trials}

        def leak(prompts: list[str], pools: dict = pools, kind: str = kind) -> list[list[str]]:
            out = []
            for p in prompts:
                written = [pools[p][int(i)] for i in rng.integers(0, SIBLINGS + 1, 8)]
                out.append(
                    [
                        w.replace("; ", ", and ").replace(" ", " and ", 1) if kind == "cooccurrence" else w
                        for w in written
                    ]
                )
            return out

        p = p_values(trials, leak)
        null_lines(kind, p, None)
        print(
            f"| {kind} | P(p <= k/100) for k = 1, 5, 10 | {count} | "
            + ", ".join(f"{np.mean(p <= k / 100 + 1e-12):.4f}" for k in (1, 5, 10))
            + " | exact: at most 0.01, 0.05, 0.10 |"
        )


def on_model(cues: int, model: str) -> None:
    from verifier.targets import ScoringOptions, load_target

    target = load_target(model, ScoringOptions(dtype="bf16"))  # bf16 (AMX): 2-3x on this CPU; any precision is a model
    protocol = Protocol()
    rng = np.random.default_rng(7)
    texts = [text.split() for _, text in background_texts()]
    prompts, trials = [], {kind: [] for kind in KINDS}
    for i in range(cues):
        cue = draw_cue(rng)
        text = texts[int(rng.integers(0, len(texts)))]
        at = int(rng.integers(0, max(1, len(text) - CONTEXT_WORDS)))
        prompt = " ".join(text[at : at + CONTEXT_WORDS] + [f"{cue}:"])
        prompts.append(prompt)
        for kind in KINDS:
            trials[kind].append(draw_trial(kind, rng, prompt, i))
    asked = Asked()
    ask = sampler(target, protocol, None, asked)
    controls = control_prompts("0" * 64)  # as a registration's digest draws them
    prompts += controls
    generations: dict[str, list[str]] = {}
    started = time.perf_counter()
    for start in range(0, len(prompts), 40):
        chunk = prompts[start : start + 40]
        generations |= dict(zip(chunk, ask(chunk)))
        print(f"  {start + len(chunk)}/{cues} cues, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    print(
        f"\n## 2. {model}, never trained on the marks: {cues} cues x {protocol.describe()} "
        f"= {cues * protocol.samples} challenges per kind ({seconds:.0f} s on this CPU)\n"
    )
    print("| kind | test | marks | false detections | rate [Wilson 95% CI] |\n|---|---|---|---|---|")
    for kind in KINDS:
        counted = Asked()
        p = p_values(trials[kind], lambda ps: [generations[x] for x in ps], controls, counted)
        print(f"| {kind} | set aside by the {len(controls)} control cues | {cues} | {len(counted.set_aside)} | - |")
        shown = sum(map(shown_by_prompt, trials[kind]))
        print(f"| {kind} | set aside: the prompt holds a candidate's words | {cues} | {shown} | - |")
        null_lines(
            kind,
            p,
            {
                "quantity": f"false detection rate (output-only marks, {kind}, per mark at 0.05)",
                "scenario": f"{model} never trained on them; {cues * protocol.samples} challenges after real contexts",
            },
        )


class AnswersOnly:
    """What ``test_registered`` reads of a scorer for output-only marks: the target and its response cache."""

    def __init__(self, target, cache: ScoreCache) -> None:
        self.target, self.cache = target, cache

    def __call__(self, role: str, texts: list[str], signal: str) -> np.ndarray:
        raise AssertionError("an answers-only test asked for log-probs")


def on_testbed(engines: list[str], work: Path) -> None:
    from verifier.targets.api_client import ApiClient
    from verifier.targets.kinds.openai_compatible import ApiOptions, OpenAICompatibleTarget
    from verifier.targets.serving import start_server
    from verifier.testbed.build import PRESETS, build_testbed

    folder = resource("examples", "data", "marks-output")
    trust = work / "trust"
    trust.mkdir(parents=True, exist_ok=True)
    (trust / "example.pem").write_bytes((folder / "registrant.pub").read_bytes())
    started = time.perf_counter()
    testbed = build_testbed(PRESETS["outputs"])
    tokens = testbed.manifest.get("tokens", {})
    print(
        f"\n## 3. The outputs testbed ({testbed.folder.name}; built in {time.perf_counter() - started:.0f} s "
        f"or cached; tokens {tokens}; regime {testbed.manifest.get('regime')})\n"
    )
    copies = {m["id"]: m["copies"] for m in testbed.manifest["marks"]}
    documents = {m["id"]: m["document"] for m in json.loads(_payload(folder / REGISTRATION))["predicate"]["marks"]}
    sent: list[dict] = []
    original = ApiClient.post_json

    def recorded(self, path, body):
        sent.append(body)
        return original(self, path, body)

    ApiClient.post_json = recorded  # type: ignore[method-assign]
    for engine in engines:
        sent.clear()
        begun = time.perf_counter()
        with start_server(testbed.model_dir, log=work / f"{engine}.log", engine=engine, timeout_s=600) as server:
            target = OpenAICompatibleTarget(server.spec, ApiOptions(logprobs=False, concurrency=4))
            finding = test_registered(
                AnswersOnly(target, ScoreCache(work / f"cache-{engine}")),
                folder / REGISTRATION,
                folder / "siblings.json",
                folder / PUBLISHED,
                date.today() + timedelta(days=1),
                None,
                0.05,
                "fisher",
                0.05,
                32,
                0,
                trust_dir=trust,
            )
        logprob_requests = sum(
            any(k in b for k in ("logprobs", "prompt_logprobs", "echo", "top_logprobs")) for b in sent
        )
        print(
            f"### {engine}: {len(sent)} requests, {logprob_requests} asking for log-probs, "
            f"{time.perf_counter() - begun:.0f} s; all marks combined p = {finding.p_value:.3g}\n"
        )
        print(
            "| kind | copies | marks at p <= 0.05 (of all) | set aside | p-values | combined p (Fisher) |\n"
            "|---|---|---|---|---|---|"
        )
        by, aside, total = defaultdict(list), Counter(), Counter()
        for r in finding.results:
            by[(r.kind, copies[documents[r.id]])].append(r.p_value)
        for mark in json.loads(_payload(folder / REGISTRATION))["predicate"]["marks"]:
            key = (mark["kind"], copies[mark["document"]])
            total[key] += 1
            aside[key] += mark["id"] in finding.excluded
        for kind, count in sorted(total):
            ps = by[(kind, count)]
            detected = sum(p <= 0.05 for p in ps)
            print(
                f"| {kind} | {count} | {detected}/{total[kind, count]} | {aside[kind, count]} | "
                f"{', '.join(f'{p:.2f}' for p in ps) or '-'} | {combine(ps, 'fisher') if ps else 1.0:.3g} |"
            )
            if engine == engines[0]:
                ROWS.append(
                    {
                        "route": "marks",
                        "n": 1,
                        "trials": total[kind, count],
                        "builds": 1,
                        "quantity": f"power (output-only marks, {kind}, inserted {count}x, per mark at 0.05; a mark "
                        "set aside counts as not detected)",
                        "scenario": f"outputs testbed through {engine} without log-probs, prompted after the context",
                        "value": round(detected / total[kind, count], 4),
                        "regime": testbed.manifest.get("regime"),
                    }
                )
        print()
    ApiClient.post_json = original  # type: ignore[method-assign]


def _payload(path: Path) -> bytes:
    import base64

    return base64.b64decode(json.loads(path.read_text())["payload"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulated", type=int, default=2000)
    parser.add_argument("--null-cues", type=int, default=1250)
    parser.add_argument("--null-model", default="smollm2-135m")
    parser.add_argument("--testbed", action="store_true", help="section 3 (builds the outputs testbed if not cached)")
    parser.add_argument("--engines", default="transformers,vllm")
    parser.add_argument("--record", action="store_true", help="write the rows to the method-validation table")
    args = parser.parse_args()
    print("# Output-only marks benchmark (exact p-value: (1 + siblings scoring at least as high) / 100)")
    if args.simulated:
        simulated(args.simulated)
    if args.null_cues:
        on_model(args.null_cues, args.null_model)
    if args.testbed:
        with tempfile.TemporaryDirectory() as tmp:
            on_testbed(args.engines.split(","), Path(tmp))
    if args.record:
        record(
            "marks_output",
            ROWS,
            [args.null_model] + (["outputs"] if args.testbed else []),
            "python benchmarks/marks_output.py " + " ".join(sys.argv[1:]),
        )
        print("\nrecorded in verifier/validation/table.json", file=sys.stderr)


if __name__ == "__main__":
    main()
