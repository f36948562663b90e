"""The shared progress reporter: stage lines always, progress lines throttled by time."""

import io

from sklearn_trellis._core.progress import Progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_lines_at_most_every_interval_stage_lines_always():
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress("Fit", verbose=1, interval=10.0, clock=clock, stream=stream)
    progress.stage("seed trees")
    for second in range(1, 36):          # an update every second for 35 s
        clock.now = float(second)
        progress.update(second, 35, "merges")
    clock.now = 36.0
    progress.stage("energy")               # never held back
    clock.now = 37.0
    assert not progress.due()
    progress.update(1, None, "splits")     # 1 s after the stage line: held back
    lines = stream.getvalue().splitlines()
    assert lines == ["[Fit] seed trees (0.0 s)",
                     "[Fit] seed trees: 10/35 merges (10.0 s)",
                     "[Fit] seed trees: 20/35 merges (20.0 s)",
                     "[Fit] seed trees: 30/35 merges (30.0 s)",
                     "[Fit] energy (36.0 s)"]
    clock.now = 47.0
    assert progress.due()
    progress.callback(None, "splits")(5)
    progress.note("done")
    assert stream.getvalue().splitlines()[-2:] == ["[Fit] energy: 5 splits (47.0 s)",
                                                   "[Fit] done (47.0 s)"]


def test_silent_without_verbose(capsys):
    progress = Progress("Fit", verbose=0, interval=0.0)
    progress.stage("seed trees")
    progress.update(1, 2)
    progress.note("x")
    assert not progress.due()
    assert capsys.readouterr().out == ""
