"""The kept samples of a set of chains, pooled (and appended to on a warm start)."""

from dataclasses import dataclass

import numpy as np

from .sampler import log_joint


@dataclass
class ChainSamples:
    """Kept samples of all chains, chain after chain, and the chains' final states.

    Attributes
    ----------
    samples : ndarray of shape (n_kept, n_items), int32
        Partitions, labels in order of first appearance.
    log_joints : ndarray of shape (n_kept,)
        ``log p(z, X)`` of each sample.
    alphas : ndarray of shape (n_kept,)
        Concentration at each sample.
    records : list or None
        The ``record(state)`` value of each sample (None without ``record``).
    states : list of GibbsState
        Final state of each chain; a warm start continues them.
    interrupted : bool
        True when a Ctrl-C ended a chain early.
    """

    samples: np.ndarray
    log_joints: np.ndarray
    alphas: np.ndarray
    records: list
    states: list
    interrupted: bool


def collect_chains(results, likelihood, prior, *, record=None, previous=None):
    """Pool the :class:`~.sampler.ChainResult` of ``run_chains`` into one sample set.

    Parameters
    ----------
    results : list of ChainResult
    likelihood : fitted ClusterLikelihood
    prior : PartitionPrior
        The chains' partition prior (its ``alpha`` is replaced by each state's).
    record : callable, default=None
        The ``record`` the chains ran with; it is evaluated on the final states
        when they stand in for samples (see below).
    previous : ChainSamples, default=None
        The samples of the fit being continued (warm start on the *same*
        data): the new samples are appended to them. Samples of other data
        must not be passed: their log joints are not those of the new data
        (a warm start on new data keeps only the last states, as an
        initialisation).

    Returns
    -------
    chains : ChainSamples
        When no sample was kept at all (a Ctrl-C before the burn-in ended),
        the chains' current states are the samples, so that estimators always
        have one.
    """
    samples = [r.samples for r in results]
    log_joints = [r.log_joints for r in results]
    alphas = [r.alphas for r in results]
    records = None if record is None else [value for r in results for value in r.records]
    if previous is not None:
        samples.insert(0, previous.samples)
        log_joints.insert(0, previous.log_joints)
        alphas.insert(0, previous.alphas)
        if records is not None:
            records = list(previous.records) + records
    samples = np.concatenate(samples)
    if samples.shape[0] == 0:  # interrupted before the burn-in ended: keep the states
        states = [r.state for r in results]
        samples = np.array([s.compact_labels() for s in states], dtype=np.int32)
        log_joints = [np.array([log_joint(s, likelihood, prior.with_alpha(s.alpha).kernel_params())
                                for s in states])]
        alphas = [np.array([s.alpha for s in states])]
        records = None if record is None else [record(s) for s in states]
    return ChainSamples(samples=samples.astype(np.int32, copy=False),
                        log_joints=np.concatenate(log_joints), alphas=np.concatenate(alphas),
                        records=records, states=[r.state for r in results],
                        interrupted=any(r.interrupted for r in results))


def n_clusters_frequencies(samples, n_items):
    """``P(K = k)`` for ``k = 1..n_items``: the frequencies of the samples' numbers of clusters.

    ``samples`` hold labels ``0..K-1`` (as the chains keep them).
    """
    k = samples.max(axis=1) + 1
    return np.bincount(k - 1, minlength=n_items)[:n_items] / k.size


__all__ = ["ChainSamples", "collect_chains", "n_clusters_frequencies"]
