"""``python -m verifier.cli``: the same app as the ``verifier`` command."""

from verifier.cli import app

app(prog_name="verifier")
