"""Trust: what a signature covers and how it is checked.

``digests`` (canonical JSON, the findings digest, file digests; importable without the ML stack),
``envelopes`` (DSSE envelopes over in-toto Statements, Ed25519 keys and key ids), ``bundle``
(content-addressed evidence bundles: written, then verified against a key or a trust folder), ``tags``
(the HMAC-SHA256 tags of the auditor's stored bytes) and
``private_files`` (the auditor's secrets: owned by the user, readable by no one else).
"""

from verifier.trust.bundle import verify_bundle, write_bundle
from verifier.trust.keys import generate_key, load_private_key

__all__ = ["generate_key", "load_private_key", "verify_bundle", "write_bundle"]
