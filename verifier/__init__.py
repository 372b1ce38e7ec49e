"""verifier: check claims about the training data of language models.

The library is the product; ``verifier.cli`` is a thin command-line layer over it.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("verifier")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
