"""Natural identifiers (hashes, UUIDs, short links, keys) found in documents, and fresh draws of
their formats: the siblings the ``identifiers`` route ranks each real one among."""
