"""Dataset inference: the set-level membership test of a suspect set against a held-out set.

``hygiene`` makes the sets disjoint and distinct, ``statistic`` is the test (after Maini et al.
2024), ``rules`` turns its result and the blind checks into a verdict, ``comparison`` is what the
report shows beside it, ``power`` simulates its rates on known membership and ``planning`` says how
many documents a test would need."""
