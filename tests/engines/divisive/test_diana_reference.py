"""DIANA against R's ``cluster::diana``: identical orders, heights and ``dc``; the merges
are the splits DIANA made, which are R's ``merge`` except where R misreads tied heights.

The reference values come from ``tests/data/make_diana_reference.py`` (R's
``cluster`` package); the inputs are stored with them, so no R is needed here.
A literal Python port of R's ``splyt`` (which recomputes every average from
scratch, as R does) checks the fast kernel on many more tie-heavy inputs.
"""

import json
import os

import numpy as np
import pytest

from oracles import assert_merges_match_r, tree_splits_with_heights
from sklearn_trellis._core.trees import banner_to_merge
from sklearn_trellis.engines.divisive import diana
from sklearn_trellis.engines.divisive._diana_kernels import r_dissimilarities

# r_dissimilarities.serial: the twin a fit runs on inputs this small (calling the kernel
# itself runs, and compiles, its parallel twin).

REFERENCE_PATH = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "data",
                              "diana_reference.json")
with open(REFERENCE_PATH) as handle:
    REFERENCE = json.load(handle)


def reference_input(entry):
    x = np.array([[np.nan if v is None else v for v in row] for row in entry["x"]])
    if entry["kind"] == "dissimilarity":
        return x
    D, ok = r_dissimilarities.serial(x, entry["metric"] == "manhattan", False)
    assert ok
    return D


def test_reference_covers_the_required_datasets():
    assert {"iris", "wine_standardised", "integer_ties", "precomputed_ties",
            "manhattan", "missing_euclidean"} <= set(REFERENCE)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_identical_to_r(name):
    entry = REFERENCE[name]
    tree = diana(reference_input(entry))
    assert_merges_match_r(tree.merge, entry["merge"], tree.distances)
    np.testing.assert_array_equal(tree.order + 1, entry["order"])
    # Bit for bit: same distances, same choices, same diameters.
    assert tree.heights.tolist() == entry["height"]
    assert tree.divisive_coefficient == entry["dc"]


def r_splyt(D, splits=None):
    """R's ``splyt`` (twins.c) transcribed literally, 0-based: ``(order, banner)``.

    ``splits``, a list, receives every split as ``(parent, left, right, diameter)``
    (frozensets of objects): the tree the banner encodes.
    """
    n = D.shape[0]
    ner = list(range(n))
    ban = [0.0] * n
    todo = [(0, n - 1)]
    while todo:
        ja, jb = todo.pop()
        if jb - ja == 1:
            ban[jb] = D[ner[ja], ner[jb]]
            if splits is not None:
                splits.append((frozenset(ner[ja:jb + 1]), frozenset([ner[ja]]),
                               frozenset([ner[jb]]), ban[jb]))
            continue
        diameter = max(D[ner[a], ner[b]] for a in range(ja, jb + 1) for b in range(ja, jb + 1))
        best, first = -1.0, -1
        for l in range(ja, jb + 1):
            sd = 0.0
            for j in range(ja, jb + 1):
                sd += D[ner[l], ner[j]]
            if best < sd:
                best, first = sd, l
        ner.insert(jb, ner.pop(first))
        splyn, jma = 0, jb - 1
        while True:
            splyn += 1
            rest = jma - ja
            bdyff, jaway = -1.0, -1
            for l in range(ja, jma + 1):
                da = 0.0
                for j in range(ja, jma + 1):
                    da += D[ner[l], ner[j]]
                db = 0.0
                for j in range(jma + 1, jb + 1):
                    db += D[ner[l], ner[j]]
                dyff = da / rest - db / splyn
                if bdyff < dyff:
                    bdyff, jaway = dyff, l
            jmb = jma + 1
            if bdyff <= 0:
                break
            ner.insert(jma, ner.pop(jaway))
            for lxx in range(jmb, jb + 1):
                if ner[lxx - 1] < ner[lxx]:
                    break
                ner[lxx - 1], ner[lxx] = ner[lxx], ner[lxx - 1]
            jma -= 1
            jmb = jma + 1
            if jma == ja:
                break
        if ner[ja] >= ner[jmb]:
            ner[ja:jb + 1] = ner[jmb:jb + 1] + ner[ja:jmb]
            jmb = ja + (jb - jmb + 1)
        ban[jmb] = diameter
        if splits is not None:
            splits.append((frozenset(ner[ja:jb + 1]), frozenset(ner[ja:jmb]),
                           frozenset(ner[jmb:jb + 1]), diameter))
        for a, b in ((ja, jmb - 1), (jmb, jb)):
            if b > a:
                todo.append((a, b))
    return np.array(ner), np.array(ban)


def random_dissimilarities(rng, kind, n):
    if kind == "integer_points":
        X = rng.integers(0, 3, size=(n, 2)).astype(float)
        return r_dissimilarities.serial(X, False, False)[0]
    if kind == "binary_manhattan":
        X = rng.integers(0, 2, size=(n, 4)).astype(float)
        return r_dissimilarities.serial(X, True, False)[0]
    if kind == "few_values":
        upper = np.triu(rng.choice([0.5, 1.0, 1.5], size=(n, n)), 1)
        return upper + upper.T
    X = rng.normal(size=(n, 3))
    return r_dissimilarities.serial(X, False, False)[0]


@pytest.mark.parametrize("kind", ["integer_points", "binary_manhattan", "few_values",
                                  "continuous"])
@pytest.mark.parametrize("seed", range(6))
def test_fast_kernel_makes_r_choices(kind, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    D = random_dissimilarities(rng, kind, n)
    order, banner = r_splyt(D)
    tree = diana(D)
    np.testing.assert_array_equal(tree.order, order)
    assert tree.banner.tolist() == banner.tolist()


def test_banner_reading_matches_the_split_tree_without_ties():
    # Distinct heights: the merges are exactly the splits, read bottom-up.
    x = np.array([0.0, 1.0, 3.5, 10.0, 10.7, 30.0])
    tree = diana(np.abs(x[:, None] - x[None, :]))
    merge, heights = banner_to_merge(tree.order, tree.banner, tree.split_order)
    assert np.all(np.diff(heights) >= 0)
    assert heights[-1] == 30.0
    sets = [frozenset([i]) for i in range(6)]
    for a, b in tree.children:
        sets.append(sets[a] | sets[b])
    assert frozenset({3, 4}) in sets and frozenset({0, 1, 2}) in sets


@pytest.mark.parametrize("kind", ["integer_points", "binary_manhattan", "few_values"])
@pytest.mark.parametrize("seed", range(40))
def test_tree_is_the_split_tree_when_successive_heights_tie(kind, seed):
    # Issue 31: a cluster split at the same height as its parent made the banner
    # reading join the wrong neighbours (a cluster never formed, at a height that
    # is not its diameter). The merges must be exactly the splits R's splyt made.
    rng = np.random.default_rng(seed)
    D = random_dissimilarities(rng, kind, int(rng.integers(3, 14)))
    n = D.shape[0]
    splits = []
    r_splyt(D, splits)
    tree = diana(D)
    assert tree_splits_with_heights(tree.children, tree.distances, n) == {
        (parent, left, right): height for parent, left, right, height in splits}
    assert np.all(np.diff(tree.distances) >= 0)
    np.testing.assert_array_equal(tree.children, np.where(tree.merge < 0, -tree.merge - 1,
                                                          n + tree.merge - 1))


def test_coincident_points():
    tree = diana(np.zeros((4, 4)))
    assert tree.heights.tolist() == [0.0, 0.0, 0.0]
    assert tree.divisive_coefficient == 0.0
    assert sorted(tree.order.tolist()) == [0, 1, 2, 3]
