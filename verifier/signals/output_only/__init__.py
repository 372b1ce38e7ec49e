"""Output-only signals: read the target's answers to queries (any API that generates)."""
