"""Light faces: the claim schema, the policy engine, the signal contract, a corpus summary check and
``verify`` (of a plain, a pre-registered and a batch bundle) import no ML stack.

Each check runs in a fresh interpreter (this one has long since imported torch) and lists which of
the heavy packages ended up in ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import ROOT, write_refused_claim
from verifier.cli import app
from verifier.trust.keys import generate_key

HEAVY = ("torch", "transformers", "sklearn", "pandas")
runner = CliRunner()


def heavy_after(code: str) -> list[str]:
    """The heavy packages imported by running ``code`` in a fresh interpreter (which must succeed)."""
    probe = f"import sys\n{code}\nprint([m for m in {HEAVY!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return eval(done.stdout.strip().splitlines()[-1])  # our own probe's list of names


def test_the_light_faces_import_no_ml_stack():
    code = (
        "import verifier.claims, verifier.policy.engine, verifier.signals.base, verifier.corpus.composition, "
        "verifier.trust"
    )
    assert heavy_after(code) == []


def test_a_claim_is_read_and_its_target_kind_known_without_torch(tmp_path):
    """Reading a claim checks its target spec against the target kinds, whose discovery imports
    every part (scikit-learn and pandas come with some signals and routes), but no model code."""
    claim = write_refused_claim(tmp_path, "light")
    code = (
        "from verifier.claims import load_claim\nfrom verifier.targets import kind_of\n"
        f"claim = load_claim({str(claim)!r}).manifest\nassert kind_of(claim.model.target).name == 'causal_lm'\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    heavy_after(code)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """(bundle or batch folder, public key) of a plain, a pre-registered and a batch audit of refused claims (no model
    loads)."""
    folder = tmp_path_factory.mktemp("light")
    key = folder / "k.key"
    generate_key(key)
    claim = write_refused_claim(folder, "light-plain")
    made = {}
    assert (
        runner.invoke(app, ["audit", str(claim), "--sign-key", str(key), "--out", str(folder / "plain")]).exit_code == 4
    )
    made["plain"] = next((folder / "plain").iterdir())
    assert (
        runner.invoke(
            app, ["plan", str(claim), "--sign-key", str(key), "--out", str(folder / "plan.dsse.json")]
        ).exit_code
        == 0
    )
    result = runner.invoke(
        app,
        [
            "audit",
            str(claim),
            "--plan",
            str(folder / "plan.dsse.json"),
            "--sign-key",
            str(key),
            "--out",
            str(folder / "planned"),
        ],
    )
    assert result.exit_code == 4, result.output
    made["pre-registered"] = next((folder / "planned").iterdir())
    for name in ("one", "two"):
        (folder / name).mkdir()
        write_refused_claim(folder / name, f"light-{name}")
    (folder / "batch.yaml").write_text(
        yaml.safe_dump(
            {
                "batch": {"id": "light", "statement": "two refused claims"},
                "claims": ["one/claim.yaml", "two/claim.yaml"],
            }
        )
    )
    result = runner.invoke(
        app, ["audit", str(folder / "batch.yaml"), "--sign-key", str(key), "--out", str(folder / "batches")]
    )
    assert result.exit_code == 4, result.output
    made["batch"] = folder / "batches" / "light"
    return {name: (path, Path(f"{key}.pub")) for name, path in made.items()}


@pytest.mark.parametrize("kind", ["plain", "pre-registered", "batch"])
def test_verify_imports_no_ml_stack(bundles, kind):
    folder, public = bundles[kind]
    code = (
        "from typer.testing import CliRunner\nfrom verifier.cli import app\n"
        f"r = CliRunner().invoke(app, ['verify', {str(folder)!r}, '--key', {str(public)!r}])\n"
        "assert r.exit_code == 0, r.output"
    )
    assert heavy_after(code) == []
