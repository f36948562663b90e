import os
import sys

# The brute-force oracles live beside the tests.
sys.path.insert(0, os.path.dirname(__file__))
