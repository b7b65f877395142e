#!/usr/bin/env python3
"""Runs the kit's unit tests (python -m unittest discover on this folder); exit 77
with the reason when this interpreter has no numpy, which the kit needs."""

import os
import sys
import unittest

try:
    import numpy  # noqa: F401
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable} (the kit needs it)")
    sys.exit(77)
here = os.path.dirname(os.path.abspath(__file__))
result = unittest.main(module=None, argv=[sys.argv[0], "discover", "-s", here, "-v"], exit=False).result
sys.exit(0 if result.wasSuccessful() else 1)
