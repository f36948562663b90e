import os
import sys

# The oracles (oracles.py) and scikit-learn recipes live at the top of tests/.
sys.path.insert(0, os.path.dirname(__file__))
