"""Shared foundations: bitset subsets, cluster families, tree formats, validation, memory budgets.

Everything else in the package may import from here; nothing here imports
from the rest of the package.
"""
