"""Contract rendering (byte-stable golden text), the generated world and the
executor."""

import numpy as np
import pytest

import jaxpapers.goskills as S
from tests.goskills.conftest import N_SKILLS

TEXTS = [
  S.SkillText("load-csv", "Load the csv table", "# load-csv\nload it."),
  S.SkillText("clean-csv", "Clean the csv table", "# clean-csv\nclean it."),
  S.SkillText("check-utf8", "Validate utf-8", "# check-utf8\ncheck it."),
  S.SkillText(
    "quick-clean", "Quickly clean the csv table", "# quick-clean\nnope."
  ),
]

GOLDEN = (
  "START:   load-csv \u2014 Load the csv table\n"
  "SUPPORT: clean-csv \u2014 Clean the csv table\n"
  "CHECK:   check-utf8 \u2014 Validate utf-8\n"
  "AVOID:   quick-clean \u2014 Quickly clean the csv table\n"
  "---\n"
  "# load-csv\nload it.\n# clean-csv\nclean it.\n# check-utf8\ncheck it.\n"
)


def test_render_golden_and_order():
  # Pick order CHECK, START, SUPPORT: the contract lists by role, payloads in
  # contract order.
  out = S.render_contract([2, 0, 1, -1], [2, 0, 1, -1], [3, -1], TEXTS)
  assert out == GOLDEN
  assert out.encode("utf-8") == GOLDEN.encode("utf-8")
  flat = S.render_contract([1, 3], [-1, -1], np.zeros(0, int), TEXTS)
  assert flat.startswith(
    "SKILLS:  clean-csv \u2014 Clean the csv table; quick-clean"
  )
  assert flat.endswith("# clean-csv\nclean it.\n# quick-clean\nnope.\n")
  empty = S.render_contract([0, -1], [0, -1], [-1], TEXTS)
  assert "SUPPORT: (none)" in empty and "AVOID:   (none)" in empty


def test_library_and_tasks_are_consistent(small_world):
  lib, tasks, _ = small_world
  g = lib.graph
  kind, req = np.asarray(g.kind), np.asarray(g.req)
  assert lib.n == N_SKILLS and req.shape == (N_SKILLS, len(S.REQUIREMENTS))
  src, dst, typ = np.asarray(g.src), np.asarray(g.dst), np.asarray(g.etype)
  for s, d, t in zip(src, dst, typ):
    if t == 5:
      assert kind[s] == 2 and lib.is_decoy[d]  # notes flag decoys
    if t == 4:
      # a validator checks its step's tag
      assert kind[s] == 1 and (req[s] & req[d]).any()
  for w in lib.workflows:
    assert 3 <= len(w) <= 6 and len(set(w)) == len(w)
  assert lib.is_decoy.any()
  for i in range(len(tasks.texts)):
    steps = tasks.required[i][tasks.required[i] >= 0]
    assert tasks.entry[i] == steps[0]
    # visible tags come from the steps
    assert (tasks.visible[i] <= req[steps].any(0)).all()
    assert 2 <= tasks.visible[i].sum() <= 4
    assert (tasks.check_tags[i] <= tasks.visible[i]).all()
    assert not tasks.check_tags[i, S.NUM_CHECKABLE :].any()
  again = S.make_skill_library(3, n_skills=N_SKILLS, reuse=0.3, decoy_rate=0.5)
  assert [t.purpose for t in again.texts] == [t.purpose for t in lib.texts]


def test_executor_counts_items_exactly(small_world):
  lib, tasks, _ = small_world
  req = np.asarray(lib.graph.req)
  kind = np.asarray(lib.graph.kind)
  i = 0
  steps = tasks.required[i][tasks.required[i] >= 0]
  vals = [
    v
    for v in range(lib.n)
    if kind[v] == 1 and (req[v] & tasks.check_tags[i]).any()
  ]
  vals = [
    v for t in np.nonzero(tasks.check_tags[i])[0] for v in vals if req[v, t]
  ][:]
  ids = np.full((1, 12), -1)
  perfect = list(steps) + vals
  ids[0, : len(perfect)] = perfect
  roles = np.full((1, 12), -1)
  roles[0, 0] = S.START
  sub = _one_task(tasks, i)
  rng = np.random.default_rng(0)
  out = S.simulate_execution(ids, roles, np.full((1, 0), -1), sub, lib, rng)
  assert out["success"][0] and out["reward"][0] == 1.0
  assert out["steps"][0] == len(perfect)
  # Wrong entry (a flat list starting at the last step) and one step missing.
  flat = np.full((1, 12), -1)
  flat[0, : len(steps) - 1] = list(steps[::-1][: len(steps) - 1])
  out2 = S.simulate_execution(
    flat, np.full((1, 12), -1), np.full((1, 0), -1), sub, lib, rng
  )
  n_items = 2 + len(steps) + tasks.check_tags[i].sum()
  missing = 1 + 1 + tasks.check_tags[i].sum()  # entry, one step, every check
  assert out2["reward"][0] == pytest.approx((n_items - missing) / n_items)
  assert out2["steps"][0] == len(steps) - 1 + 2 * missing
  assert (
    out2["tokens"][0]
    == np.asarray(lib.graph.cost)[flat[0, : len(steps) - 1]].sum()
  )


def test_executor_decoys_and_avoid(small_world):
  lib, tasks, _ = small_world
  decoy = int(np.nonzero(lib.is_decoy)[0][0])
  sub = _one_task(tasks, 0)
  ids = np.array([[int(sub.entry[0]), decoy]])
  roles = np.array([[S.START, S.SUPPORT]])
  run = lambda av, p: S.simulate_execution(
    ids, roles, np.array([[av]]), sub, lib, np.random.default_rng(0), p_decoy=p
  )
  assert (
    run(-1, 1.0)["decoy_executed"][0] and not run(-1, 0.0)["decoy_executed"][0]
  )
  assert not run(decoy, 1.0)["decoy_executed"][0]  # an AVOID note prevents it
  assert run(decoy, 1.0)["tokens"][0] == run(-1, 1.0)["tokens"][0] + 12


def _one_task(tasks, i):
  return S.TaskSet(
    texts=[tasks.texts[i]],
    **{
      k: getattr(tasks, k)[i : i + 1]
      for k in (
        "visible",
        "required",
        "entry",
        "check_tags",
        "pitfalls",
        "workflow",
      )
    },
  )
