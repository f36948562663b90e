"""MAP solvers: exact MILP, Perturb-and-MAP sampling, greedy and beam search."""
