"""Target kinds, one module each, registering itself (see ``verifier.targets.registry``)."""
