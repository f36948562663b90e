"""The numba kernels of the cell types, one module per type (the protocol: :mod:`..cell_kernels`)."""
