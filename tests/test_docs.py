"""The documentation: reference pages generated from the code must match it, and the site builds
with no warning."""

from __future__ import annotations

import runpy

import pytest
from conftest import ROOT


def test_generated_reference_pages_match_the_code(capsys):
    gen = runpy.run_path(str(ROOT / "docs" / "gen.py"))
    assert gen["main"](["--check"]) == 0, capsys.readouterr().err


def test_the_readme_opens_with_the_two_commands_and_stays_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert (
        lines[2:6] == ["```bash", lines[3], lines[4], "```"]
        and lines[3].startswith("make demo")
        and lines[4].startswith("make test")
    )
    assert len(lines) < 200


@pytest.mark.slow
def test_the_docs_build_with_no_warning(tmp_path):
    """mkdocs in strict mode, warnings shown (not --quiet, which drops them before strict mode counts
    them): a broken link or anchor, or a page outside the nav, fails here as in 'make docs'."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=900,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert done.returncode == 0 and not warnings, "\n".join(warnings) or done.stderr[-2000:]


def test_a_readme_table_edited_by_hand_is_caught():
    gen = runpy.run_path(str(ROOT / "docs" / "gen.py"))
    readme = (ROOT / "README.md").read_text()
    assert gen["readme_tables_drifted"](readme) == []
    edited = readme.replace("| loss | 0.494", "| loss | 0.594", 1)
    assert edited != readme and gen["readme_tables_drifted"](edited) == [
        "README.md's signal-table (not what docs/benchmarks/results/signal_table.md records)"
    ]
