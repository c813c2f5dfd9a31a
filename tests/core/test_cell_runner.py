"""CellRunner: computes missing cells in order, stamps their cost, honours
budget and report-only."""

import time

import pytest

from jaxpapers import core


def test_computes_missing_cells_once_and_stamps_their_cost(tmp_path):
  calls = []
  runner = core.CellRunner(core.CellStore(tmp_path / "cells"))
  got = runner.cell("a|trial000", lambda: calls.append("a") or {"val": [0.5]})
  assert calls == ["a"] and got["val"] == [0.5]
  assert got["cpu_s"] >= 0 and got["wall_s"] >= 0 and not runner.stopped
  assert runner.cell("a|trial000", lambda: calls.append("again") or {}) == got
  # a fresh runner on the same folder reads the cell back and computes nothing
  again = core.CellRunner(core.CellStore(tmp_path / "cells"))
  assert again.cell("a|trial000", lambda: calls.append("resumed") or {}) == got
  assert calls == ["a"]


def test_report_only_computes_nothing(tmp_path):
  store = core.CellStore(tmp_path / "cells")
  store.put("done", {"x": 1})
  runner = core.CellRunner(store, report_only=True)
  assert runner.cell("done", lambda: pytest.fail("computed")) == {"x": 1}
  assert runner.cell("missing", lambda: pytest.fail("computed")) is None
  assert "missing" not in store and not runner.stopped


def test_a_spent_budget_starts_no_new_cell(tmp_path):
  runner = core.CellRunner(core.CellStore(tmp_path / "cells"), budget_s=1e-6)
  # may start: the budget is checked before a cell
  runner.cell("first", lambda: {"x": 1})
  t0 = time.process_time()
  while time.process_time() - t0 < 1e-3:  # spend more than the budget
    pass
  assert runner.cell("second", lambda: pytest.fail("started")) is None
  assert runner.stopped and "second" not in runner.store


def test_bad_arguments_are_named(tmp_path):
  with pytest.raises(TypeError, match="store must be a CellStore"):
    core.CellRunner({})
  with pytest.raises(ValueError, match="budget_s must be a number >= 0"):
    core.CellRunner(core.CellStore(tmp_path), budget_s=-1)
  runner = core.CellRunner(core.CellStore(tmp_path / "cells"))
  with pytest.raises(TypeError, match="compute\\(\\) must return a dict"):
    runner.cell("x", lambda: [1, 2])
  assert "x" not in runner.store
