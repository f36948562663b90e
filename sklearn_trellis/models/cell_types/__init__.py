"""The numba kernels of the cell types, one module per type.

The protocol: :mod:`sklearn_trellis.models.cell_kernels`.
"""
