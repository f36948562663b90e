"""scikit-learn-style Display objects for posterior summaries (optional ``plot`` extra).

matplotlib is imported only when something is plotted, so the package works
without it. Each Display stores the data it draws, has a ``plot(ax=None)``
method returning itself (with ``figure_`` and ``ax_`` set), and the
constructors ``from_estimator`` and ``from_samples``, as in
:mod:`sklearn.metrics`. The panels are those of Fidaner & Cemgil (2013,
Figures 4 and 9): number of blocks, pairwise occurrences ordered by the
entropy agglomeration (EA) dendrogram, the dendrogram, and the COD matrix
with its entropy sequence; and a point estimate with its credible ball's
bounds (Wade & Ghahramani 2018).
"""

import numpy as np
from scipy.cluster.hierarchy import dendrogram
from sklearn.utils.validation import check_is_fitted

from ._entropy_agglomeration import EntropyAgglomeration
from .summaries import (credible_ball, cumulative_occurrence_distribution, entropy_sequence,
                        n_clusters_histogram)


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised without matplotlib
        raise ImportError("Plotting needs matplotlib: "
                          "pip install 'sklearn-trellis[plot]'.") from exc
    return plt


def _axes(ax):
    plt = _pyplot()
    if ax is None:
        figure, ax = plt.subplots()
    else:
        figure = ax.figure
    return figure, ax



def _check_fitted_with(estimator, attributes, needs):
    """``estimator`` fitted (else ``NotFittedError``) and holding ``attributes``.

    A fitted estimator of the wrong kind gets a ``TypeError`` naming what is
    missing and which estimators have it, not scikit-learn's "not fitted yet"
    (``check_is_fitted(estimator, attributes)`` says that of any estimator
    without them, fitted or not).
    """
    check_is_fitted(estimator)
    missing = [name for name in attributes if not hasattr(estimator, name)]
    if missing:
        raise TypeError(f"{type(estimator).__name__} has no {' nor '.join(missing)}: "
                        f"{needs}.")

def _leaf_order(linkage_matrix):
    if len(linkage_matrix) == 0:   # one element: no merge (scipy refuses the empty tree)
        return np.zeros(1, dtype=np.int64)
    return np.asarray(dendrogram(linkage_matrix, no_plot=True)["leaves"], dtype=np.int64)


def _agglomerate(samples):
    """The EA tree of a sample set (its flat cut unused: one cluster fits any size)."""
    return EntropyAgglomeration(n_clusters=1).fit(samples)


def _names(element_labels, n, what="element_labels", of="elements"):
    if element_labels is None:
        return [str(i) for i in range(n)]
    if len(element_labels) != n:
        raise ValueError(f"{what} has {len(element_labels)} entries for {n} {of}.")
    return [str(name) for name in element_labels]


def _height_label(estimator):
    """What the merge heights of a fitted hierarchical estimator measure (the value axis)."""
    name = type(estimator).__name__
    if name == "EntropyAgglomeration":
        return "expected projection entropy"
    if name == "TrellisHierarchical":
        return f"{estimator.linkage} linkage distance"
    if name == "BayesianHierarchicalClustering":
        return "-log r (largest below the merge)"
    if name == "DivisiveClustering":
        return "diameter"
    return "height"


def _node_positions(linkage_matrix, leaves):
    """``(position, height)`` of every merge as scipy's ``dendrogram`` draws it.

    scipy puts the leaf at place ``p`` of the leaf order at ``5 + 10 p`` and a
    merge midway between its children, at its height. With truncation, the
    leaves include collapsed clusters (ids ``n + t``); the merges inside them
    are not drawn and get position NaN.
    """
    linkage_matrix = np.asarray(linkage_matrix)
    n = len(linkage_matrix) + 1
    position = np.full(2 * n - 1, np.nan)
    drawn = np.zeros(2 * n - 1, dtype=bool)
    position[np.asarray(leaves)] = 5.0 + 10.0 * np.arange(len(leaves))
    for t, (a, b) in enumerate(linkage_matrix[:, :2].astype(np.int64)):
        if not np.isnan(position[a]) and not np.isnan(position[b]):
            position[n + t] = 0.5 * (position[a] + position[b])
            drawn[n + t] = True
    return np.where(drawn[n:], position[n:], np.nan), linkage_matrix[:, 2]


#: Height scales of :class:`DendrogramDisplay` (``plot(heights=...)``).
HEIGHT_SCALES = ("distance", "rank", "log")
#: Trees with more leaves than this are truncated by default (``truncate_mode='auto'``).
AUTO_TRUNCATE_ABOVE = 50
#: Share of the value axis by which a merge as high as one of its children is raised
#: on the ``'log'`` scale, so that it shows as a merge of its own.
_TIE_STEP = 0.04


def scaled_heights(linkage_matrix, heights="distance"):
    """Merge heights on a dendrogram's value axis.

    Parameters
    ----------
    linkage_matrix : ndarray of shape (n - 1, 4)
        SciPy linkage matrix: children precede their parents, heights do not
        decrease from a child to its parent.
    heights : {'distance', 'rank', 'log'}, default='distance'
        ``'distance'``: the matrix's own heights (scikit-learn's
        ``distances_``); merges of equal height stack on one level. ``'rank'``:
        merge ``k`` (row order) at height ``k + 1``, so every merge has a level
        of its own and the horizontal line at ``n - c + 0.5`` cuts the tree
        into the ``c`` clusters of ``n_clusters=c``. ``'log'``:
        ``log(1 + d / d_min)`` with ``d_min`` the smallest positive height
        (spreads the low merges of a tree whose heights span orders of
        magnitude), and a merge as high as one of its children raised by
        4 % of the axis above it, so that every binary merge shows.

    Returns
    -------
    ndarray of shape (n - 1,)
        Non-decreasing from every child to its parent; with ``'rank'`` and
        ``'log'`` strictly increasing.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.plotting import scaled_heights
    >>> Z = np.array([[0, 1, 1.0, 2], [2, 3, 1.0, 2], [4, 5, 1.0, 4]])
    >>> scaled_heights(Z, "rank")
    array([1., 2., 3.])
    >>> bool(np.all(np.diff(scaled_heights(Z, "log")[1:]) > 0))
    True
    """
    if heights not in HEIGHT_SCALES:
        raise ValueError(f"heights must be one of {HEIGHT_SCALES}; got {heights!r}.")
    linkage_matrix = np.asarray(linkage_matrix, dtype=np.float64)
    if linkage_matrix.ndim != 2 or linkage_matrix.shape[1] != 4:
        raise ValueError(f"linkage_matrix must be a SciPy linkage matrix of shape (n - 1, 4), "
                         f"got shape {linkage_matrix.shape}.")
    distance = linkage_matrix[:, 2]
    if not np.all(np.isfinite(distance)):
        raise ValueError("linkage_matrix holds NaN or infinite merge heights.")
    n = len(linkage_matrix) + 1
    if heights == "distance" or n == 1:
        return distance.copy()
    if heights == "rank":
        return np.arange(1.0, n)
    positive = distance[distance > 0]
    logged = np.log1p(distance / positive.min()) if positive.size else np.zeros(n - 1)
    step = _TIE_STEP * max(float(logged.max() - logged.min()), 1.0)
    lifted = np.zeros(2 * n - 1)
    children = linkage_matrix[:, :2].astype(np.int64)
    for t in range(n - 1):       # children precede their parents
        a, b = children[t]
        below = max(lifted[a] if a >= n else -np.inf, lifted[b] if b >= n else -np.inf)
        lifted[n + t] = max(logged[t], below + step)
    return lifted[n:]


def _points(ax, value_axis):
    """Length (in points) of the axes' leaf axis."""
    box = ax.get_window_extent()
    length = box.height if value_axis == "x" else box.width
    return length * 72.0 / ax.figure.dpi


class DendrogramDisplay:
    """Dendrogram of a hierarchy, optionally with the posterior probability of each node.

    Draws any scipy linkage matrix: entropy agglomeration's (paper Figure 9,
    right panels), a :class:`~sklearn_trellis.TrellisHierarchical` MAP tree
    (each internal node annotated, when asked, with ``node_marginals_``: the
    exact posterior probability that its cluster is a node of the tree, what R's
    ``pvclust`` approximates by bootstrap), a
    :class:`~sklearn_trellis.BayesianHierarchicalClustering` or a
    :class:`~sklearn_trellis.DivisiveClustering` tree.

    A tree of more than 50 leaves is drawn truncated by default (scipy's
    ``truncate_mode='lastp'``, as many leaves as fit the axes); node
    probabilities are printed at a size that fits the leaf spacing, and only
    where they do not overlap one already printed (higher merges first);
    ``heights='rank'`` or ``'log'`` draws every binary merge at a level of its
    own (:func:`scaled_heights`).

    Parameters
    ----------
    linkage_matrix : ndarray of shape (n - 1, 4)
        SciPy linkage matrix, e.g. ``EntropyAgglomeration.linkage_matrix_``.
    element_labels : list of str, default=None
    height_label : str, default=None
        Label of the value axis; ``None``: "height" (``from_estimator`` names
        what the estimator's heights measure).
    node_probabilities : array-like of shape (m,), default=None
        A probability for each of the first ``m`` rows of ``linkage_matrix``
        (``m <= n - 1``), printed at its node; ``None``: no annotation. With
        truncation, only the drawn merges are annotated: a leaf standing for a
        collapsed cluster shows its size, as scipy draws it, and no probability.

    Attributes
    ----------
    dendrogram_ : dict
        What :func:`scipy.cluster.hierarchy.dendrogram` returned.
    leaves_ : list of int
        The leaf order (ids ``>= n`` are clusters collapsed by truncation).
    heights_ : ndarray of shape (n - 1,)
        The merge heights as drawn (on the ``heights`` scale).
    annotations_ : list of matplotlib Text
        The printed node labels, in row order (empty without ``node_probabilities``).
    annotated_merges_ : ndarray of int
        The row of ``linkage_matrix`` of each label in ``annotations_``.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_trellis.plotting import DendrogramDisplay
    >>> samples = [[0, 0, 1, 1], [0, 0, 0, 1]]
    >>> display = DendrogramDisplay.from_samples(samples)
    >>> display.leaves_
    [3, 2, 0, 1]

    A MAP tree with the probability of each node, every merge on a level of
    its own:

    >>> import numpy as np
    >>> from sklearn_trellis import TrellisHierarchical
    >>> X = np.array([[0.0], [0.1], [1.0], [1.2], [3.0]])
    >>> model = TrellisHierarchical(n_clusters=2, compute_full_tree=True).fit(X)
    >>> display = DendrogramDisplay.from_estimator(model, node_probabilities=True,
    ...                                            heights="rank")
    >>> len(display.annotations_)
    4
    >>> display.heights_
    array([1., 2., 3., 4.])
    """

    def __init__(self, linkage_matrix, element_labels=None, *, height_label=None,
                 node_probabilities=None):
        self.linkage_matrix = linkage_matrix
        self.element_labels = element_labels
        self.height_label = height_label
        self.node_probabilities = node_probabilities

    def plot(self, ax=None, *, orientation="left", heights="distance", truncate_mode="auto",
             p=None, **kwargs):
        """Draw the dendrogram (heights on the value axis).

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        orientation : {'left', 'right', 'top', 'bottom'}, default='left'
            Where the root is (scipy's meaning).
        heights : {'distance', 'rank', 'log'}, default='distance'
            The value axis (:func:`scaled_heights`): the tree's own heights,
            the merge order (among the drawn merges when truncated), or a log
            scale; the last two draw every binary merge at a level of its own.
        truncate_mode : {'auto', None, 'lastp', 'level'}, default='auto'
            scipy's truncation; ``'auto'``: none up to 50 leaves, above it
            ``'lastp'`` with ``p`` leaves. ``None`` draws every leaf (leaf
            names are then left out if they do not fit).
        p : int, default=None
            scipy's ``p``; ``None`` with ``'auto'``: as many leaves as fit the
            axes at 10 points each, between 10 and 50; with ``'lastp'`` or
            ``'level'``: scipy's default, 30.
        **kwargs
            Passed to :func:`scipy.cluster.hierarchy.dendrogram`.

        Returns
        -------
        self : DendrogramDisplay
        """
        linkage = np.asarray(self.linkage_matrix, dtype=np.float64)
        n = len(linkage) + 1
        if n < 2:
            raise ValueError("A dendrogram needs at least 2 elements, got 1.")
        probabilities = None
        if self.node_probabilities is not None:
            probabilities = np.asarray(self.node_probabilities, dtype=np.float64).ravel()
            if probabilities.size > n - 1:
                raise ValueError(f"node_probabilities has {probabilities.size} entries for "
                                 f"a tree of {n - 1} merges.")
        self.figure_, self.ax_ = _axes(ax)
        value_axis = "x" if orientation in ("left", "right") else "y"
        room = _points(self.ax_, value_axis)
        if truncate_mode == "auto":
            if p is None:
                p = int(np.clip(room // 10, 10, AUTO_TRUNCATE_ABOVE))
            truncate_mode = "lastp" if n > max(p, AUTO_TRUNCATE_ABOVE) else None
        if truncate_mode is not None:
            kwargs.update(truncate_mode=truncate_mode, p=30 if p is None else p)
        if truncate_mode is None and room / n < 6.0:
            kwargs.setdefault("no_labels", True)    # names would overlap
        self.heights_ = scaled_heights(linkage, heights)
        if heights == "rank" and truncate_mode is not None:
            # rank among the drawn merges: the hidden ones would squeeze the drawn ones
            shown = ~np.isnan(_node_positions(linkage, dendrogram(
                linkage, no_plot=True, truncate_mode=truncate_mode, p=kwargs["p"])["leaves"])[0])
            self.heights_ = np.where(shown, np.cumsum(shown), 0.0)
        drawn_linkage = linkage.copy()
        drawn_linkage[:, 2] = self.heights_
        self.dendrogram_ = dendrogram(drawn_linkage, ax=self.ax_, orientation=orientation,
                                      labels=_names(self.element_labels, n),
                                      color_threshold=0, above_threshold_color="k", **kwargs)
        self.leaves_ = list(self.dendrogram_["leaves"])
        if value_axis == "x":  # first leaf on top, matching CoClusteringDisplay's rows
            self.ax_.invert_yaxis()
        label = self.height_label or "height"
        if heights != "distance":
            label = ("merge rank" if heights == "rank"
                     else f"log(1 + {label} / smallest), ties raised")
        getattr(self.ax_, f"set_{value_axis}label")(label)
        self.annotations_, self.annotated_merges_ = [], np.zeros(0, dtype=np.intp)
        if probabilities is not None:
            # a label spans ~1.3 font sizes across, ~2.4 along its text ("0.00")
            spacing = room / len(self.leaves_) / (1.3 if value_axis == "x" else 2.4)
            self._annotate(probabilities, drawn_linkage, value_axis,
                           fontsize=float(np.clip(spacing, 5.0, 10.0)))
        return self

    def _annotate(self, probabilities, drawn_linkage, value_axis, fontsize):
        """Print the probabilities at the link tops, higher merges first, skipping any
        label that would overlap one already printed."""
        positions, heights = _node_positions(drawn_linkage, self.leaves_)
        renderer = self.figure_.canvas.get_renderer()
        placed, boxes = [], np.empty((0, 4))
        for t in range(probabilities.size - 1, -1, -1):
            if np.isnan(positions[t]):   # inside a leaf collapsed by truncation
                continue
            xy = (heights[t], positions[t]) if value_axis == "x" else (positions[t], heights[t])
            text = self.ax_.annotate(f"{probabilities[t]:.2f}", xy, xytext=(2, 2),
                                     textcoords="offset points", fontsize=fontsize,
                                     color="tab:red")
            box = text.get_window_extent(renderer).extents
            if np.any((boxes[:, 0] < box[2]) & (box[0] < boxes[:, 2])
                      & (boxes[:, 1] < box[3]) & (box[1] < boxes[:, 3])):
                text.remove()
                continue
            boxes = np.vstack([boxes, box])
            placed.append((t, text))
        placed.reverse()
        self.annotations_ = [text for _, text in placed]
        self.annotated_merges_ = np.array([t for t, _ in placed], dtype=np.intp)

    @classmethod
    def from_estimator(cls, estimator, *, element_labels=None, node_probabilities=False,
                       ax=None, **kwargs):
        """From a fitted hierarchical estimator with a ``linkage_matrix_``.

        ``node_probabilities=True`` prints ``node_marginals_`` at the nodes
        (estimators that have it: :class:`~sklearn_trellis.TrellisHierarchical`);
        ``kwargs`` go to :meth:`plot`.
        """
        _check_fitted_with(estimator, ["linkage_matrix_"],
                           "a dendrogram needs a fitted hierarchy (TrellisHierarchical, "
                           "DivisiveClustering, BayesianHierarchicalClustering, "
                           "EntropyAgglomeration)")
        probabilities = None
        if node_probabilities:
            if not hasattr(type(estimator), "node_marginals_"):
                raise ValueError(f"{type(estimator).__name__} has no node_marginals_ to "
                                 "annotate the nodes with.")
            probabilities = estimator.node_marginals_
        return cls(estimator.linkage_matrix_, element_labels,
                   height_label=_height_label(estimator),
                   node_probabilities=probabilities).plot(ax=ax, **kwargs)

    @classmethod
    def from_samples(cls, samples, *, element_labels=None, ax=None, **kwargs):
        """Run entropy agglomeration on a sample set and draw its dendrogram."""
        estimator = _agglomerate(samples)
        return cls.from_estimator(estimator, element_labels=element_labels, ax=ax, **kwargs)


class CoClusteringDisplay:
    """Heatmap of pairwise co-occurrence, rows ordered by a dendrogram (paper Figure 9).

    Parameters
    ----------
    cooccurrence : ndarray of shape (n, n)
        Pairwise co-clustering probabilities (sampled or exact).
    order : array-like of int, default=None
        Row/column order (e.g. the EA dendrogram's leaves); ``None`` = index order.
    element_labels : list of str, default=None

    Attributes
    ----------
    image_ : matplotlib AxesImage
    ax_, figure_ : matplotlib Axes and Figure
    """

    def __init__(self, cooccurrence, order=None, element_labels=None):
        self.cooccurrence = cooccurrence
        self.order = order
        self.element_labels = element_labels

    def plot(self, ax=None, *, cmap="Greys", colorbar=True):
        """Draw the heatmap."""
        matrix = np.asarray(self.cooccurrence, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"cooccurrence must be a square (n, n) matrix, got shape "
                             f"{matrix.shape}.")
        if not np.all(np.isfinite(matrix)):
            raise ValueError("cooccurrence holds NaN or inf.")
        self.figure_, self.ax_ = _axes(ax)
        n = matrix.shape[0]
        order = np.arange(n) if self.order is None else np.asarray(self.order)
        names = np.array(_names(self.element_labels, n))[order]
        self.image_ = self.ax_.imshow(matrix[np.ix_(order, order)], cmap=cmap, vmin=0.0,
                                      vmax=max(1.0, float(matrix.max())), interpolation="nearest")
        self.ax_.set_xticks(range(n), names, rotation=90)
        self.ax_.set_yticks(range(n), names)
        self.ax_.set_title("pairwise occurrences")
        if colorbar:
            self.figure_.colorbar(self.image_, ax=self.ax_)
        return self

    @classmethod
    def from_estimator(cls, estimator, *, element_labels=None, ax=None, **kwargs):
        """From a fitted EntropyAgglomeration (ordered by its dendrogram) or any
        estimator with ``pairwise_marginals_`` (index order, or by its
        ``linkage_matrix_`` if it has one)."""
        if hasattr(estimator, "cooccurrence_"):
            matrix = estimator.cooccurrence_
        elif hasattr(estimator, "pairwise_marginals_"):
            matrix = estimator.pairwise_marginals_
        else:
            check_is_fitted(estimator)
            raise TypeError(f"{type(estimator).__name__} has neither cooccurrence_ nor "
                            "pairwise_marginals_.")
        order = (_leaf_order(estimator.linkage_matrix_)
                 if hasattr(estimator, "linkage_matrix_") else None)
        return cls(matrix, order, element_labels).plot(ax=ax, **kwargs)

    @classmethod
    def from_samples(cls, samples, *, element_labels=None, ax=None, **kwargs):
        """Co-occurrence of a sample set, ordered by its EA dendrogram."""
        estimator = _agglomerate(samples)
        return cls.from_estimator(estimator, element_labels=element_labels, ax=ax, **kwargs)


class NClustersHistogramDisplay:
    """Bar plot of the distribution of the number of blocks (paper Figure 9, left).

    Parameters
    ----------
    histogram : ndarray
        ``histogram[k]`` = probability (or count) of ``k`` blocks, ``k = 0, 1, ...``
        (as returned by :func:`~sklearn_trellis.summaries.n_clusters_histogram`).

    Attributes
    ----------
    bars_ : matplotlib BarContainer
    ax_, figure_ : matplotlib Axes and Figure
    """

    def __init__(self, histogram):
        self.histogram = histogram

    def plot(self, ax=None, **kwargs):
        """Draw the bars of the non-zero range."""
        self.figure_, self.ax_ = _axes(ax)
        histogram = np.asarray(self.histogram, dtype=float)
        nonzero = np.flatnonzero(histogram)
        lo, hi = (nonzero[0], nonzero[-1]) if nonzero.size else (0, 0)
        ks = np.arange(lo, hi + 1)
        self.bars_ = self.ax_.bar(ks, histogram[lo:hi + 1], color=kwargs.pop("color", "0.4"),
                                  **kwargs)
        self.ax_.set_xticks(ks)
        self.ax_.set_xlabel("number of blocks")
        self.ax_.set_ylabel("frequency")
        return self

    @classmethod
    def from_estimator(cls, estimator, *, ax=None, **kwargs):
        """From ``n_clusters_histogram_`` (EntropyAgglomeration) or an exact
        ``n_clusters_distribution_`` (index ``k - 1``)."""
        if hasattr(estimator, "n_clusters_histogram_"):
            histogram = estimator.n_clusters_histogram_
        elif hasattr(estimator, "n_clusters_distribution_"):
            histogram = np.concatenate([[0.0], estimator.n_clusters_distribution_])
        else:
            check_is_fitted(estimator)
            raise TypeError(f"{type(estimator).__name__} has no distribution of the number "
                            "of clusters.")
        return cls(histogram).plot(ax=ax, **kwargs)

    @classmethod
    def from_samples(cls, samples, *, ax=None, **kwargs):
        """Histogram of the number of blocks of a sample set."""
        return cls(n_clusters_histogram(samples)).plot(ax=ax, **kwargs)


class EntropySequenceDisplay:
    """COD matrix and entropy sequence along an order of the elements (paper Figure 4).

    Parameters
    ----------
    cod : ndarray of shape (m, m)
        Averaged cumulative occurrence distribution.
    entropies : ndarray of shape (m,)
        Expected projection entropies of the prefixes.
    order : array-like of int
        The elements in order.
    element_labels : list of str, default=None
        Names of all n elements.

    Attributes
    ----------
    axes_ : array of two matplotlib Axes (COD matrix, entropy sequence)
    figure_ : matplotlib Figure
    """

    def __init__(self, cod, entropies, order, element_labels=None):
        self.cod = cod
        self.entropies = entropies
        self.order = order
        self.element_labels = element_labels

    def plot(self, axes=None, *, cmap="Greys", annotate=None):
        """Draw the COD matrix (annotated when small) and the entropy curve."""
        plt = _pyplot()
        if axes is None:
            self.figure_, axes = plt.subplots(1, 2, figsize=(9, 4))
        else:
            self.figure_ = axes[0].figure
        self.axes_ = np.asarray(axes)
        cod = np.asarray(self.cod)
        order = np.asarray(self.order)
        m = order.size
        names = [str(i if self.element_labels is None else self.element_labels[i])
                 for i in order]
        masked = np.ma.masked_where(np.triu(np.ones((m, m), bool), 1), cod)
        ax_cod, ax_h = self.axes_[0], self.axes_[1]
        ax_cod.imshow(masked, cmap=cmap, interpolation="nearest")
        if annotate if annotate is not None else m <= 12:
            for i in range(m):
                for k in range(i + 1):
                    ax_cod.text(k, i, f"{cod[i, k]:.1f}", ha="center", va="center",
                                color="tab:red", fontsize=8)
        ax_cod.set_yticks(range(m), names)
        ax_cod.set_xticks(range(m), [str(k + 1) for k in range(m)])
        ax_cod.set_xlabel("k (block size at least)")
        ax_cod.set_title("cumulative occurrence distribution")
        ax_h.plot(range(m), self.entropies, "o-", color="k")
        ax_h.set_xticks(range(m), names, rotation=90 if m > 12 else 0)
        ax_h.set_ylabel("expected projection entropy")
        ax_h.set_xlabel("elements added in order")
        return self

    @classmethod
    def from_samples(cls, samples, *, order=None, element_labels=None, axes=None, **kwargs):
        """COD and entropies of a sample set along ``order`` (default: index order)."""
        cod = cumulative_occurrence_distribution(samples, order)
        entropies = entropy_sequence(samples, order)
        order = np.arange(cod.shape[0]) if order is None else np.asarray(order)
        return cls(cod, entropies, order, element_labels).plot(axes=axes, **kwargs)

    @classmethod
    def from_estimator(cls, estimator, samples, *, element_labels=None, axes=None, **kwargs):
        """Along the leaf order of a fitted EntropyAgglomeration's dendrogram."""
        _check_fitted_with(estimator, ["linkage_matrix_"],
                           "the leaf order is that of a fitted EntropyAgglomeration")
        order = _leaf_order(estimator.linkage_matrix_)
        return cls.from_samples(samples, order=order, element_labels=element_labels,
                                axes=axes, **kwargs)


class CredibleBallDisplay:
    """A point estimate and its credible ball's bounds as co-clustering heatmaps.

    Four panels (Wade & Ghahramani 2018, Figure 5 style): the estimate, the
    upper vertical bound (fewest clusters), the lower vertical bound (most
    clusters) and the horizontal bound (farthest), each as the matrix
    ``[c_i == c_j]``; rows ordered so that the estimate's clusters are blocks.
    When a bound has ties the first partition is drawn.

    Parameters
    ----------
    ball : sklearn_trellis.summaries.CredibleBall
    order : array-like of int, default=None
        Row/column order; ``None`` sorts by the estimate's labels.
    element_labels : list of str, default=None

    Attributes
    ----------
    axes_ : array of four matplotlib Axes
    figure_ : matplotlib Figure
    """

    def __init__(self, ball, order=None, element_labels=None):
        self.ball = ball
        self.order = order
        self.element_labels = element_labels

    def plot(self, axes=None, *, cmap="Greys"):
        """Draw the four heatmaps."""
        plt = _pyplot()
        if axes is None:
            self.figure_, axes = plt.subplots(1, 4, figsize=(14, 3.8))
        else:
            self.figure_ = np.asarray(axes).ravel()[0].figure
        self.axes_ = np.asarray(axes).ravel()
        ball = self.ball
        estimate = np.asarray(ball.estimate)
        n = estimate.size
        order = (np.argsort(estimate, kind="stable") if self.order is None
                 else np.asarray(self.order))
        names = np.array(_names(self.element_labels, n))[order]
        panels = [("estimate", estimate, None),
                  ("upper vertical bound", ball.upper_vertical[0], ball.upper_vertical_distance),
                  ("lower vertical bound", ball.lower_vertical[0], ball.lower_vertical_distance),
                  ("horizontal bound", ball.horizontal[0], ball.horizontal_distance)]
        for ax, (title, labels, distance) in zip(self.axes_, panels):
            labels = np.asarray(labels)[order]
            ax.imshow(labels[:, None] == labels[None, :], cmap=cmap, vmin=0, vmax=1,
                      interpolation="nearest")
            k = np.unique(labels).size
            suffix = "" if distance is None else f", {ball.loss} {distance:.3g}"
            ax.set_title(f"{title}\n{k} clusters{suffix}", fontsize=10)
            if n <= 40:
                ax.set_xticks(range(n), names, rotation=90)
                ax.set_yticks(range(n), names)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
        self.figure_.suptitle(f"{ball.level:.0%} credible ball ({ball.loss}, radius "
                              f"{ball.radius:.3g})")
        return self

    @classmethod
    def from_samples(cls, samples, estimate, *, loss="vi", level=0.95, element_labels=None,
                     axes=None, **kwargs):
        """Compute :func:`~sklearn_trellis.summaries.credible_ball` and draw it."""
        ball = credible_ball(samples, estimate, loss=loss, level=level)
        return cls(ball, element_labels=element_labels).plot(axes=axes, **kwargs)

    @classmethod
    def from_estimator(cls, estimator, *, loss="vi", level=0.95, element_labels=None,
                       axes=None, **kwargs):
        """Around a fitted estimator's ``labels_``, from its ``samples_``."""
        _check_fitted_with(estimator, ["labels_"],
                           "a credible ball is drawn around a partition of the samples")
        samples = getattr(estimator, "samples_", None)
        if samples is None:
            raise TypeError(f"{type(estimator).__name__} has no samples_: a credible ball "
                            "needs sampled partitions.")
        return cls.from_samples(samples, estimator.labels_, loss=loss, level=level,
                                element_labels=element_labels, axes=axes, **kwargs)


class BannerDisplay:
    """Banner of a divisive tree, as R's ``bannerplot`` draws ``cluster::diana``.

    One horizontal bar per gap between consecutive objects of the banner order:
    it starts at the height at which the two were separated (the diameter of
    the cluster then split) and runs to the largest height, so long bars mark
    objects that stay together until late (Rousseeuw 1986; Kaufman & Rousseeuw
    1990, ch. 6). The first object is on top.

    Parameters
    ----------
    order : array-like of int, shape (n,)
        Objects in banner order (``DivisiveClustering.order_``).
    heights : array-like of float, shape (n - 1,)
        ``heights[k]`` separates ``order[k]`` and ``order[k + 1]``
        (``DivisiveClustering.heights_``).
    divisive_coefficient : float, default=None
        Shown under the plot when given.
    element_labels : list of str, default=None

    Attributes
    ----------
    bars_ : matplotlib BarContainer
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklearn_trellis import DivisiveClustering
    >>> from sklearn_trellis.plotting import BannerDisplay
    >>> model = DivisiveClustering().fit(np.array([[0.0], [1.0], [5.0], [6.0]]))
    >>> display = BannerDisplay.from_estimator(model)
    >>> [float(bar.get_x()) for bar in display.bars_]
    [1.0, 6.0, 1.0]
    """

    def __init__(self, order, heights, divisive_coefficient=None, element_labels=None):
        self.order = order
        self.heights = heights
        self.divisive_coefficient = divisive_coefficient
        self.element_labels = element_labels

    def plot(self, ax=None, *, color="tab:red", max_labels=35):
        """Draw the banner; objects are labelled when there are at most ``max_labels``."""
        self.figure_, self.ax_ = _axes(ax)
        order = np.asarray(self.order, dtype=np.int64)
        heights = np.asarray(self.heights, dtype=np.float64)
        n = order.size
        if heights.size != n - 1:
            raise ValueError(f"heights has {heights.size} entries for {n} objects "
                             f"(expected {n - 1}).")
        top = float(heights.max()) if heights.size else 0.0
        # Gap k lies between the objects drawn at rows n-1-k and n-2-k.
        rows = n - 1.5 - np.arange(n - 1)
        self.bars_ = self.ax_.barh(rows, top - heights, left=heights, height=1.0,
                                   color=color, edgecolor="none")
        self.ax_.set_xlim(0.0, top if top > 0 else 1.0)
        self.ax_.set_ylim(-0.5, n - 0.5)
        self.ax_.set_xlabel("height")
        if n <= max_labels:
            names = np.array(_names(self.element_labels, n))[order]
            self.ax_.yaxis.tick_right()
            self.ax_.set_yticks(n - 1 - np.arange(n), names)
        else:
            self.ax_.set_yticks([])
        if self.divisive_coefficient is not None:
            self.ax_.set_title(f"divisive coefficient = {self.divisive_coefficient:.2f}",
                               loc="left", fontsize="medium")
        return self

    @classmethod
    def from_estimator(cls, estimator, *, element_labels=None, ax=None, **kwargs):
        """From a fitted :class:`~sklearn_trellis.DivisiveClustering`."""
        _check_fitted_with(estimator, ["order_", "heights_"],
                           "a banner draws a divisive tree (DivisiveClustering)")
        return cls(estimator.order_, estimator.heights_,
                   getattr(estimator, "divisive_coefficient_", None),
                   element_labels).plot(ax=ax, **kwargs)


class DependenceProbabilityDisplay:
    """Heatmap of CrossCat's dependence probabilities (columns sharing a view).

    Parameters
    ----------
    dependence : ndarray of shape (d, d)
        ``P(columns j and k share a view)``, e.g. ``CrossCat.dependence_probability_``.
    order : array-like of int, default=None
        Column order; ``None`` = index order (:meth:`from_estimator` groups the
        columns by the point estimate's views).
    column_names : list of str, default=None

    Attributes
    ----------
    image_ : matplotlib AxesImage
    ax_, figure_ : matplotlib Axes and Figure
    """

    def __init__(self, dependence, order=None, column_names=None):
        self.dependence = dependence
        self.order = order
        self.column_names = column_names

    def plot(self, ax=None, *, cmap="Blues", colorbar=True):
        """Draw the heatmap (columns reordered by ``order``)."""
        self.figure_, self.ax_ = _axes(ax)
        matrix = np.asarray(self.dependence)
        d = matrix.shape[0]
        order = np.arange(d) if self.order is None else np.asarray(self.order)
        names = np.array(_names(self.column_names, d, "column_names", "columns"))[order]
        self.image_ = self.ax_.imshow(matrix[np.ix_(order, order)], cmap=cmap, vmin=0.0,
                                      vmax=1.0, interpolation="nearest")
        self.ax_.set_xticks(range(d), names, rotation=90)
        self.ax_.set_yticks(range(d), names)
        self.ax_.set_title("dependence probability")
        if colorbar:
            self.figure_.colorbar(self.image_, ax=self.ax_)
        return self

    @classmethod
    def from_estimator(cls, estimator, *, column_names=None, ax=None, **kwargs):
        """From a fitted :class:`~sklearn_trellis.CrossCat`: columns grouped by ``views_``
        (largest view first), names from ``feature_names_in_`` when it has them."""
        _check_fitted_with(estimator, ["dependence_probability_"],
                           "dependence probabilities are CrossCat's")
        views = np.asarray(estimator.views_)
        sizes = np.bincount(views)
        order = np.lexsort((np.arange(views.size), -sizes[views]))
        if column_names is None:
            column_names = getattr(estimator, "feature_names_in_", None)
        return cls(estimator.dependence_probability_, order, column_names).plot(ax=ax, **kwargs)


__all__ = ["DependenceProbabilityDisplay", "DendrogramDisplay", "scaled_heights", "CoClusteringDisplay",
           "NClustersHistogramDisplay",
           "EntropySequenceDisplay", "CredibleBallDisplay", "BannerDisplay"]
