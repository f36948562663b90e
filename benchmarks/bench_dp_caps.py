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

``--trace`` prints instead how the clusters arise, for the chain from k-means (10
clusters; the default before ``init='subsample'``) and from ``init='subsample'``: the
starting clusters (size, majority true cluster, its purity and the share of that true
cluster they hold), every accepted split and merge with the same figures for both sides,
and K and the ARI every ``--every`` iterations. From k-means, the first ~10 iterations
split the k-means clusters (unions of true clusters); a launch that has not separated
them yet can cut one true cluster in two (at 10^6 rows, seed 0: a true cluster of 50,000
rows into 15,522 and 23,120, iterations 2-3), and those parts stay apart to the end.

Run: ``PYTHONPATH=$PWD python benchmarks/bench_dp_caps.py [--rows N] [--iterations T]
[--seed S] [--trace [--every E]]`` (defaults 10^5 rows, 120 iterations, seed 0).
"""

import argparse
import os
import time

import numpy as np
from scipy.stats import multivariate_normal
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import DPMixture
from sklearn_trellis._gibbs_base import initial_labels
from sklearn_trellis.engines.gibbs import subcluster
from sklearn_trellis.engines.gibbs.shards import LocalExecutor


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


def describe(y, labels, k):
    """Size, majority true cluster, purity and the share of that true cluster held."""
    members = labels == k
    counts = np.bincount(y[members], minlength=y.max() + 1)
    top = counts.argmax()
    return (f"{members.sum()} rows of true {top} ({counts[top] / members.sum():.3f} pure, "
            f"{counts[top] / np.sum(y == top):.2f} of it)")


class TracingExecutor(LocalExecutor):
    """The in-process executor, printing every accepted split and merge."""

    def __init__(self, y, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.y, self.iteration = y, 0

    def map(self, name, *args, per_shard=None):
        if name in ("launch_start", "launch"):  # a split's cluster: the launch's first
            self._split_label = args[1]
        if name == "apply_merge":
            before = self.labels().astype(np.int64)
            print(f"  iteration {self.iteration}: merge [{describe(self.y, before, args[0])}]"
                  f" + [{describe(self.y, before, args[1])}]")
        out = super().map(name, *args, per_shard=per_shard)
        if name == "apply_split":
            after = self.labels().astype(np.int64)
            print(f"  iteration {self.iteration}: split into "
                  f"[{describe(self.y, after, self._split_label)}]"
                  f" + [{describe(self.y, after, args[0])}]")
        return out


def trace(X, y, model, args):
    """How the clusters arise from k-means and from ``init='subsample'``."""
    likelihood, prior = model.model_, model.prior_
    data = likelihood.check_sampler_data(X)
    pp = prior.kernel_params()
    for init in ("kmeans", "subsample"):
        rng = np.random.RandomState(args.seed)
        start = time.perf_counter()
        if init == "kmeans":
            labels = initial_labels("kmeans", X, rng)
        else:
            rows = subcluster.subsample_rows(X.shape[0])
            labels = subcluster.subsample_start(
                likelihood, prior, data, init_labels=initial_labels("kmeans", X[rows], rng),
                random_state=rng)
        print(f"\n== init={init!r}: K={labels.max() + 1}, ARI "
              f"{adjusted_rand_score(y, labels):.4f} ({time.perf_counter() - start:.1f} s)")
        for k in range(labels.max() + 1):
            counts = np.bincount(y[labels == k], minlength=y.max() + 1)
            print(f"   cluster {k}: {describe(y, labels, k)}; true clusters > 1%: "
                  f"{np.flatnonzero(counts > 0.01 * counts.sum()).tolist()}")
        executor = TracingExecutor(y, likelihood, data, labels)
        state = subcluster.new_state(likelihood, executor, labels, prior.alpha)
        start = time.perf_counter()
        for t in range(1, args.iterations + 1):
            executor.iteration = t
            subcluster.iterate(state, likelihood, pp, rng, n_split_merge=10)
            if t % args.every == 0 or t == args.iterations:
                print(f"iteration {t}: K={state.n_clusters}, ARI "
                      f"{adjusted_rand_score(y, state.labels):.4f} "
                      f"({time.perf_counter() - start:.0f} s, load average "
                      "%.1f %.1f %.1f)" % os.getloadavg(), flush=True)
        final = state.labels
        print("final clusters: " + "; ".join(describe(y, final, k)
                                             for k in range(state.n_clusters)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--iterations", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", action="store_true",
                        help="trace the chains from k-means and from init='subsample'")
    parser.add_argument("--every", type=int, default=10,
                        help="--trace: print K and the ARI every this many iterations")
    args = parser.parse_args()
    X, y = make_blobs(n_samples=args.rows, n_features=10, centers=20, cluster_std=1.0,
                      center_box=(-10, 10), random_state=0)
    if args.trace:   # the fitted likelihood and prior, from a fit of one iteration
        trace(X, y, DPMixture(method="subcluster", n_sweeps=1, init="one",
                                   n_split_merge=0).fit(X), args)
        return
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
