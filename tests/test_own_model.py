"""The docs page "Audit your own model", run as a new user would: its commands, on their own tiny
Hugging Face model and JSONL files, with nothing but what the page says. The claim the page shows is
the one `verifier init` writes. The GGUF and API sections run on SmolLM2-135M and a real server
(slow)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, WIKIMIA, make_tiny_gpt2, read_jsonl

PAGE = ROOT / "docs" / "own-model.md"


def sections() -> dict[str, list[str]]:
    """The page's bash blocks by section title: the commands a user copies."""
    found: dict[str, list[str]] = {}
    for title, body in re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", PAGE.read_text(), flags=re.M | re.S):
        for block in re.findall(r"```bash\n(.*?)```", body, flags=re.S):
            found.setdefault(title, []).extend(line for line in block.splitlines() if line.strip())
    return found


def shown_claim() -> str:
    return re.search(r"```yaml\n(.*?)```", PAGE.read_text(), flags=re.S).group(1)


def user_folder(tmp_path: Path, per_set: int = 40) -> Path:
    """What a new user has: a folder of their own documents, same kind and period in both sets."""
    rows = [r for r in read_jsonl(WIKIMIA / "length64.jsonl") if r["label"] == 1]
    audit = tmp_path / "my-audit"
    audit.mkdir()
    for name, part in (("suspect", rows[:per_set]), ("heldout", rows[per_set : 2 * per_set])):
        (audit / f"{name}.jsonl").write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in part))
    return tmp_path


def run(line: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One command of the page, as typed (``verifier`` is the installed CLI)."""
    words = shlex.split(line.split(" #")[0].rstrip(" &"))
    assert words[0] == "verifier", line
    return subprocess.run(
        [sys.executable, "-m", "verifier.cli", *words[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
    )


def audit_as_the_page_says(commands: list[str], cwd: Path) -> dict:
    init, audit = (c for c in commands if c.startswith(("verifier init", "verifier audit")))
    made = run(init, cwd)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "verifier audit my-audit/claim.yaml"  # the next command, printed
    audited = run(audit, cwd)
    assert audited.returncode in (0, 3, 4), audited.stderr  # a verdict, never an error
    (bundle,) = (cwd / "evidence").iterdir()
    assert (bundle / "report.pdf").stat().st_size > 10_000
    return json.loads((bundle / "findings.json").read_text())


def test_a_new_user_audits_their_own_hf_model_with_the_pages_commands(tmp_path, wikimia64):
    folder = user_folder(tmp_path)
    make_tiny_gpt2(folder / "my-model", [r["text"] for r in wikimia64], seed=0, vocab_size=600)
    commands = sections()["1. A Hugging Face model folder"]
    findings = audit_as_the_page_says(commands, folder)
    assert (folder / "my-audit" / "claim.yaml").read_text() == shown_claim()  # the page shows what init writes
    assert findings["decided_by"] == "dataset_inference" and findings["model"]["target"]["spec"] == "my-model"
    assert findings["verdict"] in ("INCONCLUSIVE", "CONTRADICTED", "REJECTED-METHOD")
    assert len(findings["lead"].split()) <= 60


@pytest.mark.slow
def test_the_gguf_section_runs_on_a_real_gguf_file(tmp_path):
    from verifier.targets.model_source import resolve_model

    folder = user_folder(tmp_path, per_set=20)
    source = resolve_model("smollm2-135m")
    commands = sections()["2. A GGUF file"]
    spec = re.search(r"--model (\S+)", commands[0]).group(1)
    (folder / spec).parent.mkdir(parents=True)
    os.symlink(Path(source.location) / source.gguf_file, folder / spec)
    findings = audit_as_the_page_says(commands, folder)
    assert findings["model"]["target"]["spec"] == Path(spec).name and findings["decided_by"] == "dataset_inference"


@pytest.mark.slow
def test_the_api_section_runs_against_a_real_server(tmp_path, smollm2_logprob_server):
    folder = user_folder(tmp_path, per_set=20)  # every signal through HTTP: the smallest sets the route takes
    commands = [c for c in sections()["3. A model behind an API"] if not c.startswith("verifier serve")]
    commands = [
        c.replace("openai-compatible:http://127.0.0.1:8011/v1#my-model", smollm2_logprob_server.spec) for c in commands
    ]
    findings = audit_as_the_page_says(commands, folder)
    assert findings["model"]["target"]["kind"] == "openai_compatible" and findings["decided_by"] == "dataset_inference"
    shutil.rmtree(folder / "evidence")
