"""The auditor's keys and the reader's trust store.

A signing key is named by the auditor (``--key``) or is the default one, created (mode 0600) on
first use; a reader pins signers' public keys in the trust store (``$VERIFIER_TRUST_DIR``, else
``~/.config/verifier/trusted``; time-stamping authorities' certificates in its ``tsa/`` folder).
Keys come only from what the auditor or reader names, never from a bundle or a claim.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from verifier.boundary.atomic import atomic_output
from verifier.errors import VerifierError
from verifier.trust.envelopes import key_id, load_public_key, public_pem
from verifier.trust.private_files import check_private


def default_key_path() -> Path:
    """``~/.config/verifier/signing.key``: the auditor's key when none is named."""
    return Path.home() / ".config" / "verifier" / "signing.key"


def signing_key(path: Path | None) -> tuple[Ed25519PrivateKey, Path | None]:
    """The key at ``path``, else the default key, created (mode 0600) if it does not exist yet;
    returns it with the path of a key this call created (None if none was)."""
    key_path = path or default_key_path()
    created = None
    if path is None and not key_path.exists():
        generate_key(key_path)
        created = key_path
    return load_private_key(key_path), created


def default_trust_dir() -> Path:
    """``$VERIFIER_TRUST_DIR``, else ``~/.config/verifier/trusted``: the public keys a reader pins."""
    if env := os.environ.get("VERIFIER_TRUST_DIR"):
        return Path(env)
    return Path.home() / ".config" / "verifier" / "trusted"


def trusted_keys(trust_dir: Path | None = None) -> set[str]:
    """Fingerprints of the pinned public keys (``*.pem`` / ``*.pub`` files of the trust store)."""
    return set(pinned_public_keys(trust_dir))


def pinned_public_keys(trust_dir: Path | None = None) -> dict[str, bytes]:
    """The trust store's public keys (PEM) by fingerprint."""
    folder = trust_dir or default_trust_dir()
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.iterdir()):
        if path.suffix in (".pem", ".pub") and path.is_file() and not path.is_symlink():
            try:  # a file that is not an Ed25519 public key pins nothing (and blocks nothing)
                pem = public_pem(load_public_key(path.read_bytes(), str(path)))
            except (VerifierError, OSError):
                continue
            found[key_id(pem)] = pem
    return found


def trust_key(public_path: Path, trust_dir: Path | None = None) -> tuple[Path, str]:
    """Pin a signer's public key: copy it into the trust store, named by its fingerprint."""
    try:
        pem = Path(public_path).read_bytes()
    except OSError as exc:
        raise VerifierError(f"{public_path}: cannot read ({exc.strerror})") from None
    fingerprint = key_id(public_pem(load_public_key(pem, str(public_path))))
    folder = trust_dir or default_trust_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{fingerprint[:16]}.pem"
    with atomic_output(target) as tmp:
        tmp.write_bytes(public_pem(load_public_key(pem, str(public_path))))
    return target, fingerprint


def generate_key(path: Path, force: bool = False) -> Path:
    """Write a new private key (PEM, mode 0600) and its public key beside it (``.pub``).

    Either file may be the only copy of a key that signed published bundles, so neither is
    replaced unless ``force``; each is written atomically, so a crash never leaves a half-written key.
    """
    public_path = path.with_name(path.name + ".pub")
    if not force:
        for existing in (path, public_path):
            if existing.exists():
                raise VerifierError(
                    f"{existing}: exists; refusing to overwrite a key (keys generate --force replaces it)"
                )
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with atomic_output(path) as tmp:
        tmp.chmod(0o600)  # before the secret is written
        tmp.write_bytes(pem)
    with atomic_output(public_path) as tmp:
        tmp.write_bytes(public_pem(key.public_key()))
        tmp.chmod(0o644)
    return public_path


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 key at ``path``, refused when other accounts can read it (they could sign as you)."""
    try:
        check_private(Path(path), "signing key")
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise VerifierError(f"{path}: not a readable private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise VerifierError(f"{path}: not an Ed25519 key")
    return key
