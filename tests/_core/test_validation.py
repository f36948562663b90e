"""writeable_if_small: small read-only arrays are copied, anything else is passed through."""

import numpy as np

from sklearn_trellis._core import validation
from sklearn_trellis._core.validation import writeable_if_small


def _read_only(array):
    array.setflags(write=False)
    return array


def test_small_read_only_array_is_copied_keeping_values_and_layout():
    X = _read_only(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    copy = writeable_if_small(X)
    assert copy.flags.writeable and copy.flags.f_contiguous
    assert not np.shares_memory(copy, X) and not X.flags.writeable
    np.testing.assert_array_equal(copy, X, strict=True)


def test_read_only_memmap_becomes_a_plain_writeable_array(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(4.0))
    X = np.load(tmp_path / "x.npy", mmap_mode="r")
    copy = writeable_if_small(X)
    assert type(copy) is np.ndarray and copy.flags.writeable
    np.testing.assert_array_equal(copy, X)


def test_large_read_only_and_writeable_arrays_are_returned_unchanged(monkeypatch):
    writeable = np.zeros(3)
    assert writeable_if_small(writeable) is writeable
    X = _read_only(np.zeros(4))                 # 32 bytes
    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 31)
    assert writeable_if_small(X) is X
    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 32)
    assert writeable_if_small(X) is not X
    assert writeable_if_small([1.0, 2.0]) == [1.0, 2.0]
