"""The documentation's reference pages are generated from the code: they must match it."""

from __future__ import annotations

import runpy

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
