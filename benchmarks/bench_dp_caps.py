"""Why the sub-cluster sampler keeps extra clusters on Gaussian blobs (issue 30): the posterior
or the moves?

Fits ``DPMixture(method='subcluster')`` to Gaussian blobs (10 features, 20 clusters), takes
the chain's last state and, for every extra cluster (one whose rows' majority true cluster
is that of a bigger cluster, its *parent*), prints

- the exact collapsed log posterior gain of merging it into its parent,
  ``log p(z_merged, X) - log p(z, X)`` (NIW marginals and the CRP, at the state's ``alpha``
  and likelihood hyperparameters), and its minimum over the hyperparameter grid: positive
  means the posterior prefers the merge, so a surviving extra cluster is a mixing failure;
- ``log q`` of the merge's reverse split (the launch that a merge must reproduce,
  ``subcluster._launch`` forced to the current sides) for a few random seed rows: the
  merge is accepted with probability about ``exp(gain + log q)``;
- the best ``log q`` any single restricted pass could give: one pass at the two sides' own
  maximum-likelihood Gaussians and weights (no launch reaches better parameters).

Run: ``PYTHONPATH=$PWD python benchmarks/bench_dp_caps.py [--rows N] [--iterations T]
[--seed S]`` (defaults 10^5 rows, 120 iterations, seed 0).
"""

import argparse
import os
import time

import numpy as np
from scipy.stats import multivariate_normal
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import DPMixture
from sklearn_trellis.engines.gibbs import subcluster


def log_joint_of(model, state, data, labels, params):
    """``log p(z, X)`` of ``labels`` at the likelihood hyperparameters ``params``."""
    other = subcluster.new_state(model.model_, data, labels, state.alpha, params=params)
    return subcluster.log_joint(other, model.model_,
                                model.prior_.with_alpha(state.alpha).kernel_params())


def best_pass_log_q(X, side_rows):
    """``log`` probability that one restricted pass at the sides' own maximum-likelihood
    Gaussians and weights reproduces the sides."""
    rows = np.concatenate(side_rows)
    m = rows.size
    scores = np.array([multivariate_normal(X[r].mean(0), np.cov(X[r].T)).logpdf(X[rows])
                       + np.log(r.size / m) for r in side_rows])
    own = np.concatenate([np.full(r.size, s) for s, r in enumerate(side_rows)])
    return float(np.sum(scores[own, np.arange(m)] - np.logaddexp.reduce(scores, axis=0)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--iterations", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    X, y = make_blobs(n_samples=args.rows, n_features=10, centers=20, cluster_std=1.0,
                      center_box=(-10, 10), random_state=0)
    start = time.perf_counter()
    model = DPMixture(method="subcluster", n_sweeps=args.iterations,
                      burn_in=args.iterations - 1, point_estimate="map",
                      random_state=args.seed).fit(X)
    print(f"{args.rows} rows, {args.iterations} iterations, seed {args.seed}: "
          f"K = {model.n_clusters_}, ARI {adjusted_rand_score(y, model.labels_):.4f} "
          f"({time.perf_counter() - start:.0f} s; load average "
          "%.1f %.1f %.1f)" % os.getloadavg())
    state = model._chains.states[0]
    likelihood = model.model_
    data = likelihood.check_sampler_data(X)
    labels = state.labels
    print("state hyperparameters:", likelihood.describe_params(state.params[None]),
          f"alpha {state.alpha:.3g}")
    K = state.n_clusters
    majority = np.array([np.bincount(y[labels == k]).argmax() for k in range(K)])
    grid = likelihood.hyperparameter_grid()
    grid_params = [state.params] if grid is None else list(grid[0])
    rng = np.random.RandomState(args.seed)
    base = log_joint_of(model, state, data, labels, state.params)
    for k in range(K):
        siblings = [c for c in range(K) if c != k and majority[c] == majority[k]]
        if not siblings or state.counts[k] > max(state.counts[c] for c in siblings):
            continue
        parent = max(siblings, key=lambda c: state.counts[c])
        merged = np.where(labels == k, parent, labels)
        gain = log_joint_of(model, state, data, merged, state.params) - base
        grid_gain = min(log_joint_of(model, state, data, merged, p)
                        - log_joint_of(model, state, data, labels, p) for p in grid_params)
        rows_k, rows_p = np.flatnonzero(labels == k), np.flatnonzero(labels == parent)
        log_q = []
        for _ in range(5):
            log_q.append(subcluster._launch(state, likelihood, k, parent, rng.choice(rows_k),
                                            rng.choice(rows_p), rng, forced=True)[0])
            state.executor.map("end_launch")
        print(f"extra cluster {k} ({state.counts[k]} rows) of true cluster {majority[k]} "
              f"(parent {parent}, {state.counts[parent]} rows): merge gain {gain:+.1f} nats "
              f"(min over the {len(grid_params)} grid points {grid_gain:+.1f}); launch log q "
              f"{np.round(log_q, 1).tolist()}; best one-pass log q "
              f"{best_pass_log_q(X, [rows_k, rows_p]):.1f}; centres "
              f"{np.linalg.norm(X[rows_k].mean(0) - X[rows_p].mean(0)):.2f} apart", flush=True)


if __name__ == "__main__":
    main()
