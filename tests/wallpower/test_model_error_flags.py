"""Issue 35 item 7: a relative model error is a finding only where the energy is not tiny."""

from __future__ import annotations

from dataclasses import replace

from eams.calibrate.wallpower import check_runs, load_fleet
from eams.calibrate.wallpower.check import (
    MODEL_ERROR_MIN_RUN_PCT,
    MODEL_ERROR_WARN_PCT,
    _warnings,
    model_error_flagged,
    unflagged_model_errors,
)
from eams.calibrate.wallpower.report import render_html
from tests.wallpower.test_vt5 import _runs


def _with(run, node: str, metered_wh: float, error_pct: float):  # type: ignore[no-untyped-def]
    """``run`` with ``node`` metered at ``metered_wh`` and modelled ``error_pct`` off it."""
    n = replace(run.nodes[node], metered_wh=metered_wh,
                modelled_wh=metered_wh * (1 + error_pct / 100))  # fmt: skip
    return replace(run, nodes={**run.nodes, node: n})


def test_a_large_error_on_a_tiny_energy_is_stated_not_flagged(two_runs, fleet_dir) -> None:
    result = check_runs(*_runs(two_runs), load_fleet(fleet_dir))
    assert not any("model error" in w for w in result.warnings)  # the right fleet: none
    b = result.b
    # a node asleep nearly all run: −19.3 % of a sliver of the run's energy
    tiny_wh = b.metered_wh * MODEL_ERROR_MIN_RUN_PCT / 100
    asleep = _with(b, "n3", tiny_wh, -19.3)
    assert not model_error_flagged(asleep.nodes["n3"], asleep.metered_wh)
    assert not any("model error" in w for w in _warnings((result.a, asleep)))
    [note] = unflagged_model_errors(asleep)
    error_wh = asleep.nodes["n3"].modelled_wh - tiny_wh
    assert note.startswith("n3: model error -19.3 % is not flagged")
    assert f"{error_wh:+.4f} Wh" in note and f"{MODEL_ERROR_MIN_RUN_PCT:g} %" in note
    html = render_html(replace(result, b=asleep))
    assert '<p class="small unflagged">n3: model error -19.3 % is not flagged' in html
    # the same relative error on an energy that matters is a finding, with its Wh
    awake = _with(b, "n3", b.nodes["n3"].metered_wh, -19.3)
    assert model_error_flagged(awake.nodes["n3"], awake.metered_wh)
    [flag] = [w for w in _warnings((result.a, awake)) if "model error" in w]
    assert f"over ±{MODEL_ERROR_WARN_PCT:g} %" in flag and "n3 -19.3 % (" in flag
    assert unflagged_model_errors(awake) == []
    # under the relative threshold nothing is said at all, whatever the energy
    assert unflagged_model_errors(_with(b, "n3", tiny_wh, MODEL_ERROR_WARN_PCT / 2)) == []
