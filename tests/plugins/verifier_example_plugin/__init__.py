"""A worked example of a verifier plugin: a signal and a target kind in a package of their own.

Installed beside verifier, it declares two entry points (see the ``dist-info`` folder beside it,
which is what ``pip install`` writes from this ``pyproject.toml`` section)::

    [project.entry-points."verifier.signals"]
    median_logprob = "verifier_example_plugin.median_logprob"

    [project.entry-points."verifier.targets"]
    unigram = "verifier_example_plugin.unigram"

Nothing in verifier names these modules: ``verifier.signals.REGISTRY`` and ``verifier.targets.KINDS``
find them through the entry points, and ``verifier.conformance`` checks them like verifier's own.
"""
