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


def test_a_numpy_generator_as_random_state_is_refused_with_the_fix_named():
    # scikit-learn's convention (check_random_state refuses Generators), our message
    # names the remedy; the summaries and the datasets share it (the estimators'
    # parameter constraints already list the accepted types).
    import pytest

    from sklearn_trellis import DPMixture
    from sklearn_trellis.datasets import make_gaussian_pairs, make_ginkgo_jets
    from sklearn_trellis.summaries import point_estimate
    rng = np.random.default_rng(0)
    calls = [lambda: validation.check_random_state(rng),
             lambda: make_gaussian_pairs(4, random_state=rng),
             lambda: make_ginkgo_jets(1, random_state=rng),
             lambda: point_estimate([[0, 0, 1]], random_state=rng)]
    for call in calls:
        with pytest.raises(ValueError, match=r"numpy.random.Generator: pass an int"):
            call()
    with pytest.raises(ValueError, match="RandomState"):
        DPMixture(method="gibbs", n_sweeps=2, random_state=rng).fit(np.arange(5.0)[:, None])
    shared = validation.check_random_state(np.random.RandomState(rng.bit_generator))
    assert isinstance(shared, np.random.RandomState)
    assert validation.check_random_state(3).randint(10**6) == \
        np.random.RandomState(3).randint(10**6)
