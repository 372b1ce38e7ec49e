"""An EU training-content summary checked field by field (see ``check``)."""
