"""Signed, content-addressed evidence bundles."""

from verifier.evidence.bundle import verify_bundle, write_bundle
from verifier.evidence.signing import generate_key, load_private_key

__all__ = ["generate_key", "load_private_key", "verify_bundle", "write_bundle"]
