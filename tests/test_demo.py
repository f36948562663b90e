"""The demo, ``python -m sklearn_trellis``: its report says what happened in this run."""

from sklearn_trellis.__main__ import main


def test_a_warm_run_does_not_claim_compilation(capsys):
    assert main(["--per-class", "3"]) == 0
    capsys.readouterr()
    assert main(["--per-class", "3"]) == 0   # same process: everything is compiled
    last_line = capsys.readouterr().out.strip().splitlines()[-1]
    assert last_line.startswith("exact inference over all 6 items took")
    assert "compil" not in last_line


def test_timed_counts_compilations_only_when_they_happen():
    import numba

    from sklearn_trellis.__main__ import timed

    add_one = numba.njit(lambda x: x + 1)   # a new dispatcher: compiled on its first call
    assert timed(add_one, 1)[::2] == (2, 1)
    assert timed(add_one, 2)[::2] == (3, 0)


def test_options_out_of_range_are_usage_errors_and_approximations_are_named(capsys):
    import pytest
    for argv in (["--per-class", "0"], ["--per-class", "300"], ["--beta", "-1"]):
        with pytest.raises(SystemExit) as stop:   # argparse's usage error, exit status 2
            main(argv)
        assert stop.value.code == 2
    assert "error: --per-class must be >= 1" in capsys.readouterr().err
    # 30 tumours are past exact inference: the report says it is the sparse trellis
    assert main(["--per-class", "15"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Approximate correlation clustering of 30 tumours")
    assert "too many items for exact inference: sparse trellis" in out
    assert out.strip().splitlines()[-1].startswith("approximate inference over all 30 items")
