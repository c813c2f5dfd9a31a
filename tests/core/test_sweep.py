"""core.sweep: sharded == unsharded, resume == uninterrupted, atomic cell store,
no recompiles."""

import functools
import json
import logging

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxpapers import core
from jaxpapers.core import sweep as sweep_lib

R, T, C = 5, 12, 3  # runs (not a multiple of 8), steps, chunk length


def _data():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((32, 3)).astype(np.float32)
  y = (
    x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1 * rng.standard_normal(32)
  ).astype(np.float32)
  return {"x": jnp.asarray(x), "y": jnp.asarray(y)}


def _tx(hp):
  return optax.adam(hp["lr"], b1=hp["b1"])


def init_fn(hp, key, data):
  w = 0.1 * jax.random.normal(key, (3,))
  return {"w": w, "opt": _tx(hp).init(w)}


def step_fn(state, hp, key, step, data):
  idx = jax.random.randint(
    jax.random.fold_in(key, step), (8,), 0, data["x"].shape[0]
  )

  def loss(w):
    return jnp.mean((data["x"][idx] @ w - data["y"][idx]) ** 2)

  value, g = jax.value_and_grad(loss)(state["w"])
  upd, opt = _tx(hp).update(g, state["opt"], state["w"])
  return {"w": state["w"] + upd, "opt": opt}, {
    "loss": value,
    "gnorm": jnp.linalg.norm(g),
  }


def eval_fn(state, hp, key, data):
  return jnp.mean((data["x"] @ state["w"] - data["y"]) ** 2)


def _grid(r=R):
  hp = {"lr": jnp.linspace(0.01, 0.1, r), "b1": jnp.full((r,), 0.9)}
  return hp, jax.random.split(jax.random.key(42), r)


@pytest.fixture(scope="module")
def engine():
  """One engine (default mesh) shared by the tests below: its compiled programs
  are reused."""
  return core.Sweep(init_fn, step_fn, eval_fn)


def _assert_trees(a, b, **tol):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    if tol:
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), **tol)
    else:
      np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_sharded_equals_single_device_and_shapes():
  assert jax.device_count() == 8
  hp, keys = _grid()
  data = _data()
  mesh8 = jax.make_mesh(
    (8,), ("runs",), axis_types=(jax.sharding.AxisType.Auto,)
  )
  mesh1 = jax.make_mesh(
    (1,),
    ("runs",),
    axis_types=(jax.sharding.AxisType.Auto,),
    devices=jax.devices()[:1],
  )
  sharded = core.Sweep(init_fn, step_fn, eval_fn, mesh=mesh8).run(
    hp, keys, num_steps=T, chunk_size=C, data=data
  )
  single = core.Sweep(init_fn, step_fn, eval_fn, mesh=mesh1).run(
    hp, keys, num_steps=T, chunk_size=C, data=data
  )
  chex.assert_shape(sharded.history["loss"], (R, T))
  chex.assert_shape(sharded.evals, (R, T // C))
  chex.assert_shape(sharded.state["w"], (R, 3))
  assert len(sharded.state["w"].sharding.device_set) == 8
  np.testing.assert_array_equal(sharded.steps, [3, 6, 9, 12])
  assert sharded.complete and sharded.resumed_from == 0
  _assert_trees(sharded, single, rtol=1e-6, atol=1e-7)


def test_two_axis_mesh_pads_runs_to_the_runs_axis_only(engine):
  """On a (runs=2, data=4) mesh the 5 runs are padded to 6 (a multiple of the
  runs axis), not to 8 (every device); the extra axis replicates each run and
  the results are unchanged."""
  hp, keys = _grid()
  data = _data()
  auto = (jax.sharding.AxisType.Auto,) * 2
  mesh = jax.make_mesh((2, 4), ("runs", "data"), axis_types=auto)
  res = core.Sweep(init_fn, step_fn, eval_fn, mesh=mesh).run(
    hp, keys, num_steps=T, chunk_size=C, data=data
  )
  # the host buffer holds the padded runs
  assert res.history["loss"].base.shape[0] == 6
  ref = engine.run(hp, keys, num_steps=T, chunk_size=C, data=data)
  _assert_trees(res, ref, rtol=1e-6, atol=1e-7)


def test_runs_mesh_minimises_load_then_padding():
  # The default mesh: e.g. 5 runs on 8 devices use 5 devices (one run each, no
  # padding).
  sizes = {
    r: sweep_lib.runs_mesh(r).devices.size for r in (1, 3, 8, 10, 13, 17)
  }
  assert sizes == {1: 1, 3: 3, 8: 8, 10: 5, 13: 7, 17: 6}
  with pytest.raises(ValueError, match="num_runs"):
    sweep_lib.runs_mesh(0)


def test_each_run_equals_a_plain_python_loop(engine):
  """Independent reference: one run alone, a Python loop over steps (no vmap,
  scan, sharding)."""
  hp, keys = _grid()
  data = _data()
  res = engine.run(hp, keys, num_steps=T, chunk_size=C, data=data)
  # one chunk: init fused into it
  whole = engine.run(hp, keys, num_steps=T, data=data)
  np.testing.assert_array_equal(whole.steps, [T])
  np.testing.assert_allclose(
    whole.history["loss"], res.history["loss"], rtol=2e-5, atol=1e-6
  )
  np.testing.assert_allclose(
    whole.evals[:, 0], res.evals[:, -1], rtol=2e-5, atol=1e-6
  )
  one_step, one_eval = jax.jit(step_fn), jax.jit(eval_fn)
  for i in (0, R - 1):
    hp_i = jax.tree.map(lambda x: x[i], hp)
    state = jax.jit(init_fn)(hp_i, keys[i], data)
    losses, evals = [], []
    for t in range(T):
      state, m = one_step(state, hp_i, keys[i], jnp.int32(t), data)
      losses.append(float(m["loss"]))
      if (t + 1) % C == 0:
        evals.append(float(one_eval(state, hp_i, keys[i], data)))
    np.testing.assert_allclose(
      res.history["loss"][i], losses, rtol=2e-5, atol=1e-6
    )
    np.testing.assert_allclose(res.evals[i], evals, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(
      np.asarray(res.state["w"][i]),
      np.asarray(state["w"]),
      rtol=2e-5,
      atol=1e-6,
    )


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path, engine):
  hp, keys = _grid()
  data = _data()
  full = engine.run(hp, keys, num_steps=T, chunk_size=C, data=data)
  part = engine.run(
    hp,
    keys,
    num_steps=T,
    chunk_size=C,
    data=data,
    checkpoint_dir=tmp_path / "ck",
    max_chunks=2,
  )
  assert not part.complete and part.steps_done == 2 * C
  np.testing.assert_array_equal(part.history["loss"][:, 2 * C :], 0.0)
  # A rerun resumes from the checkpoint saved after chunk 2.
  resumed = engine.run(
    hp,
    keys,
    num_steps=T,
    chunk_size=C,
    data=data,
    checkpoint_dir=tmp_path / "ck",
  )
  assert resumed.resumed_from == 2 * C and resumed.complete
  _assert_trees(resumed.history, full.history)
  _assert_trees(resumed.evals, full.evals)
  _assert_trees(resumed.state, full.state)
  # Another grid on the same checkpoint directory is refused, not silently
  # resumed.
  with pytest.raises(ValueError, match="different sweep"):
    engine.run(
      jax.tree.map(lambda x: 2 * x, hp),
      keys,
      num_steps=T,
      chunk_size=C,
      data=data,
      checkpoint_dir=tmp_path / "ck",
    )


def test_no_recompilation_across_chunks_and_grids():
  chex.clear_trace_counter()
  traced_step = chex.assert_max_traces(step_fn, n=1)
  traced_init = chex.assert_max_traces(init_fn, n=1)
  engine = core.Sweep(traced_init, traced_step, eval_fn)
  hp, keys = _grid()
  data = _data()
  engine.run(hp, keys, num_steps=T, chunk_size=C, data=data)  # 4 chunks
  hp2 = {"lr": hp["lr"][::-1], "b1": hp["b1"] * 0.9}
  # another grid and horizon
  engine.run(hp2, keys, num_steps=2 * T, chunk_size=C, data=data)


def test_bad_inputs_are_named(engine):
  hp, keys = _grid()
  with pytest.raises(TypeError, match="typed PRNG keys"):
    engine.run(hp, jax.random.key_data(keys), num_steps=T)
  with pytest.raises(ValueError, match=r"\['lr'\].*leading runs axis"):
    engine.run({"lr": hp["lr"][:3], "b1": hp["b1"]}, keys, num_steps=T)
  with pytest.raises(ValueError, match="chunk_size"):
    engine.run(hp, keys, num_steps=T, chunk_size=5)
  with pytest.raises(ValueError, match="num_steps"):
    engine.run(hp, keys, num_steps=0)
  with pytest.raises(TypeError, match="step_fn"):
    core.Sweep(init_fn, None)


def test_cell_store_roundtrip_reopen_and_atomic_write(tmp_path, monkeypatch):
  store = core.CellStore(tmp_path / "cells")
  assert "a/b|c" not in store and len(store) == 0
  store.put(
    "a/b|c", {"acc": np.float32(0.5), "curve": np.arange(3), "t": (1, 2)}
  )
  store.put("z", [1.0])
  assert store["a/b|c"] == {"acc": 0.5, "curve": [0, 1, 2], "t": [1, 2]}
  reopened = core.CellStore(tmp_path / "cells")
  assert reopened.items() == [
    ("a/b|c", {"acc": 0.5, "curve": [0, 1, 2], "t": [1, 2]}),
    ("z", [1.0]),
  ]
  # A serialiser failing halfway through (json.dump streams into the file)
  # leaves the old value in place and no partial or temporary file behind.
  with pytest.raises(TypeError, match="JSON-serialisable"):
    store.put("z", {"first": list(range(1000)), "bad": object()})
  with pytest.raises(TypeError, match="JSON-serialisable"):
    store.put("new", {"first": list(range(1000)), "bad": object()})
  assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == [
    store.path("a/b|c").name,
    store.path("z").name,
  ]
  assert json.loads(store.path("z").read_text())["value"] == [1.0]
  assert core.CellStore(tmp_path / "cells").get("z") == [1.0]
  assert "new" not in core.CellStore(tmp_path / "cells")
  # Only process 0 writes; others see their own puts in memory.
  monkeypatch.setattr(jax, "process_index", lambda: 1)
  other = core.CellStore(tmp_path / "cells")
  other.put("from_rank1", 3)
  assert other.get("from_rank1") == 3
  assert not store.path("from_rank1").exists()


def test_a_corrupt_latest_checkpoint_falls_back_to_the_one_before(
  tmp_path, engine, caplog
):
  hp, keys = _grid()
  data = _data()
  run = functools.partial(
    engine.run, hp, keys, num_steps=T, chunk_size=C, data=data
  )
  full = run()
  # checkpoints after chunks 2 and 3 kept
  run(checkpoint_dir=tmp_path / "ck", max_chunks=3)
  for f in (tmp_path / "ck" / str(3 * C)).rglob("*"):
    if f.is_file() and f.parent.name == "d":
      f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])  # cut off
  with caplog.at_level(logging.WARNING):
    resumed = run(checkpoint_dir=tmp_path / "ck")
  assert (
    f"checkpoint step {3 * C} from" in caplog.text
    and f"falling back to step {2 * C}" in caplog.text
  )
  assert resumed.resumed_from == 2 * C and resumed.complete
  _assert_trees(resumed.history, full.history)
  _assert_trees(resumed.state, full.state)


def test_cell_store_recomputes_a_cut_off_or_altered_cell_with_a_warning(
  tmp_path, caplog
):
  store = core.CellStore(tmp_path / "cells")
  store.put("a", {"acc": 0.5})
  store.put("b", {"acc": 0.25})
  store.put("c", {"acc": 0.125})
  a, b = store.path("a"), store.path("b")
  # cut off mid-write (by something other than put)
  a.write_text(a.read_text()[:15])
  # valid JSON, another value
  b.write_text(b.read_text().replace("0.25", "0.75"))
  # a cell written before digests: read as it is
  legacy = tmp_path / "cells" / "old.json"
  legacy.write_text(json.dumps({"name": "old", "value": 1}))
  with caplog.at_level(logging.WARNING):
    reopened = core.CellStore(tmp_path / "cells")
  assert sorted(reopened) == ["c", "old"]
  assert f"{a} is corrupt" in caplog.text and "not valid JSON" in caplog.text
  assert (
    f"{b} is corrupt" in caplog.text
    and "does not match its recorded SHA-256" in caplog.text
  )
  assert reopened.get_or_compute("a", lambda _: {"acc": 0.5}) == {"acc": 0.5}
  # repaired on disk
  assert core.CellStore(tmp_path / "cells")["a"] == {"acc": 0.5}


def test_cell_store_reload_and_wait_for_see_another_process_cells(tmp_path):
  """Two stores on one folder (two jobs sharing cells): reload shows the other's
  cells and keeps this one's; wait_for re-reads on its own clock until the cell
  is there or the deadline passes."""
  mine, other = core.CellStore(tmp_path), core.CellStore(tmp_path)
  mine.put("a", 1)
  assert "a" not in other and other.reload() is other and other["a"] == 1
  other._cells["only_in_memory"] = 3  # a put of a process that does not write
  assert other.reload()["only_in_memory"] == 3
  now, sleeps = [0.0], []

  def sleep(s):  # the other job stores "b" during the second wait
    sleeps.append(s)
    now[0] += s
    if len(sleeps) == 2:
      other.put("b", [2])

  assert mine.wait_for(
    "b", deadline=100.0, poll_s=20.0, clock=lambda: now[0], sleep=sleep
  )
  assert mine["b"] == [2] and sleeps == [20.0, 20.0]
  assert not mine.wait_for(
    "c", deadline=50.0, poll_s=20.0, clock=lambda: now[0], sleep=sleep
  )
  assert now[0] == 60.0  # gave up at the first read past the deadline
  # stored: no wait
  assert mine.wait_for("a", deadline=0.0, clock=lambda: 1.0, sleep=sleep)
  with pytest.raises(ValueError, match="poll_s"):
    mine.wait_for("c", poll_s=0)


def test_fill_cells_computes_the_missing_cells_once_in_order(tmp_path):
  """A grid of 6 cells, 2 already stored: compute runs for the other 4 only,
  with each cell's own arguments (catches a late-bound loop variable), and the
  values come back in grid order."""
  store = core.CellStore(tmp_path / "cells")
  # a finished cell: read back, not recomputed
  store.put("lr=0.5/seed=0", {"loss": -1.0})
  store.put("lr=0.5/seed=2", {"loss": -2.0})
  grid = {f"lr={lr}/seed={s}": (lr, s) for lr in (0.25, 0.5) for s in range(3)}
  calls = []

  def compute(lr, s):
    calls.append((lr, s))
    return {"loss": np.float64(lr * 4 + s)}

  values = core.fill_cells(
    store, grid, compute, desc="cells", show_progress=False
  )
  assert calls == [(0.25, 0), (0.25, 1), (0.25, 2), (0.5, 1)]
  assert values == [{"loss": v} for v in (1.0, 2.0, 3.0, -1.0, 3.0, -2.0)]
  # JSON types, as a resumed run reads them
  assert type(values[0]["loss"]) is float
  # A rerun on the same folder computes nothing and returns the same values.
  calls.clear()
  again = core.fill_cells(
    core.CellStore(tmp_path / "cells"), grid, compute, show_progress=False
  )
  assert calls == [] and again == values


def test_fill_cells_names_bad_arguments(tmp_path):
  store = core.CellStore(tmp_path / "cells")
  with pytest.raises(TypeError, match="store"):
    core.fill_cells({}, {"a": ()}, lambda: 0)
  with pytest.raises(TypeError, match="cells must be a mapping"):
    core.fill_cells(store, [("a", ())], lambda: 0)
  with pytest.raises(TypeError, match=r"cells\['a'\]"):
    core.fill_cells(store, {"a": 3}, lambda x: x)
  with pytest.raises(TypeError, match="compute"):
    core.fill_cells(store, {"a": ()}, None)
  assert len(store) == 0


@pytest.mark.parametrize("name", ["cells.json", "cells.json.xz"])
def test_cell_store_snapshot_roundtrips_and_adds_only_missing_cells(
  tmp_path, name
):
  src = core.CellStore(tmp_path / "src")
  values = {"x/seed=0": {"acc": [0.25, 0.5]}, "y": 3, "z|w": None}
  for k, v in values.items():
    src.put(k, v)
  path = tmp_path / "snap" / name
  assert src.save_snapshot(path) == 3
  raw = path.read_bytes()
  # xz magic only when asked
  assert raw.startswith(b"\xfd7zXZ") == name.endswith(".xz")
  dst = core.CellStore(tmp_path / "dst")
  dst.put("y", 4)
  assert dst.restore_snapshot(path) == 2
  assert dst.to_dict() == {**values, "y": 4}
  # on disk too
  assert core.CellStore(tmp_path / "dst").to_dict() == {**values, "y": 4}
  assert dst.restore_snapshot(path) == 0  # idempotent


def test_cell_store_restore_snapshot_names_a_bad_file(tmp_path):
  store = core.CellStore(tmp_path / "cells")
  with pytest.raises(FileNotFoundError):
    store.restore_snapshot(tmp_path / "missing.json")
  for i, text in enumerate(
    ["not json", "[1]", '{"format": "other", "cells": {}}']
  ):
    (tmp_path / f"bad{i}.json").write_text(text)
    with pytest.raises(ValueError, match="not a cell snapshot"):
      store.restore_snapshot(tmp_path / f"bad{i}.json")
  (tmp_path / "bad.json.xz").write_bytes(b"plain")
  with pytest.raises(ValueError, match="not a cell snapshot"):
    store.restore_snapshot(tmp_path / "bad.json.xz")
