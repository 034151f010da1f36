"""pytest setup: import pipetwin from the installed package, or from the build tree
(build/python) when it is not installed."""
import os
import sys

try:
    import pipetwin  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
