"""Marks made before release and the exact rank tests that use them (canaries, copyright traps,
STAMP-style rephrasings), and natural identifiers already in documents (hashes, UUIDs, short
links, keys) tested against fresh draws of their format."""
