"""A chapter re-run on the measured profile through papermill: the `profile` parameter reaches
the chapter, its verdict table comes back, and the measured hardware changes its numbers."""

import pytest

from infsched.profiling import experiments as ex


@pytest.mark.slow
def test_shepherd_rerun_on_the_stored_cpu_profile():
    # the session's sweep cache (conftest): the run on the published profile shares its points
    # with the Shepherd chapter's own nbval run, whichever comes first
    runs = ex.rerun_chapters(ex.measured_path(), chapters=("shepherd",), scale="smoke")
    assert set(runs["chapter"]) == {"shepherd"} and len(runs) > 20
    t4 = runs[(runs["item"] == "table4") & (runs["quantity"] == "rn18_b1_ms")].iloc[0]
    # Table 4's ResNet18 at batch 1 (3.96 ms on the V100) against one CPU thread (~37 ms)
    assert float(t4["ours (published)"]) == pytest.approx(3.96)
    assert float(t4["ours (measured)"]) > 20
    changed = ex.conclusions_changed(runs)
    assert "table4" in set(changed["item"])
