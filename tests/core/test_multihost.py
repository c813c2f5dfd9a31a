"""Two processes x two fake CPU devices form one 4-device job, as several hosts
do.

Each job is started once per module (:func:`first_job`, then :func:`resumed_job`
continuing from its checkpoints); the tests check what the processes returned
and wrote against references computed here, in one process: float64 numpy
closed forms and the same step on a 4-device mesh of this process.

Every process gets its own workdir (as hosts with local disks do), except the
``checkpoints`` folder, which is a link to one shared folder (as a shared
mount): so what process 1 writes is told apart from what process 0 writes.
"""

import json
import os
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxpapers import core
from tests import multiprocess_util

NUM_PROCESSES = 2
DEVICES_PER_PROCESS = 2
BATCH = 8  # global batch: 2 rows per device of the 4-device mesh
FEATURES = 3
STEPS = 6  # train_loop runs; the interrupted one stops after INTERRUPT_AT
INTERRUPT_AT = 3
LR = 0.1
WORKER = "tests.core.test_multihost"


# -------------------------------------------------- shared by workers and tests


def dataset(num_rows: int) -> dict[str, np.ndarray]:
  """A regression data set, the same in every process (float32 rows)."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(num_rows, FEATURES)).astype(np.float32)
  y = x @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=num_rows)
  return {"x": x, "y": y.astype(np.float32)}


def linear_loss(params, batch):
  return jnp.mean((batch["x"] @ params["w"] + params["b"] - batch["y"]) ** 2)


@jax.jit
def linear_step(params, batch):
  loss, grads = jax.value_and_grad(linear_loss)(params, batch)
  return jax.tree.map(lambda p, g: p - LR * g, params, grads), loss


def linear_init():
  return {"w": np.zeros(FEATURES, np.float32), "b": np.zeros((), np.float32)}


def model_loss(model, batch):
  return jnp.mean((model(batch["x"])[:, 0] - batch["y"]) ** 2)


@jax.jit
def model_step(state, batch):
  loss, grads, rest = state.value_and_grad(model_loss, batch)
  return state.apply_gradients(grads, rest=rest), {"loss": loss}


def model_state(mesh):
  state = core.TrainState.create(
    nnx.Linear(FEATURES, 1, rngs=nnx.Rngs(0)), optax.sgd(LR)
  )
  return core.replicate(state, mesh)


def params_of(state) -> dict[str, list]:
  return {
    k: np.asarray(v).tolist()
    for k, v in (
      ("kernel", state.params["kernel"][...]),
      ("bias", state.params["bias"][...]),
    )
  }


def run_train_loop(workdir, num_steps, mesh, read_log=None, desc="train"):
  data = dataset(STEPS * BATCH)

  def read(step):
    def rows(r):
      if read_log is not None:
        read_log.append([step * BATCH + int(i) for i in r])
      return {k: v[step * BATCH + r] for k, v in data.items()}

    return rows

  state, history = core.train_loop(
    model_state(mesh),
    model_step,
    lambda step: core.load_global_batch(read(step), BATCH, mesh),
    num_steps=num_steps,
    workdir=workdir,
    checkpoint_every=0 if workdir is None else INTERRUPT_AT,
    log_every=1,
    desc=desc,
  )
  return state, [
    {k: v for k, v in r.items() if k != "elapsed_s"} for r in history
  ]


# ---------------------------------------- a core.sweep grid over both processes

# 2 runs on each of the 4 devices: the runs axis spans both processes
SWEEP_RUNS = 8
SWEEP_STEPS = 4
SWEEP_CHUNK = 2


def sweep_init(hp, key, data):
  del hp, data
  return {"w": 0.1 * jax.random.normal(key, (FEATURES,)), "b": jnp.zeros(())}


def sweep_step(params, hp, key, step, data):
  del key, step
  loss, grads = jax.value_and_grad(linear_loss)(params, data)
  return jax.tree.map(lambda p, g: p - hp["lr"] * g, params, grads), {
    "loss": loss
  }


def sweep_inputs():
  hp = {"lr": np.linspace(0.02, 0.2, SWEEP_RUNS).astype(np.float32)}
  return hp, jax.random.split(jax.random.key(0), SWEEP_RUNS), dataset(BATCH)


def run_sweep_grid(checkpoint_dir=None, max_chunks=None) -> dict:
  from jax.experimental import multihost_utils

  hp, keys, data = sweep_inputs()
  res = core.Sweep(sweep_init, sweep_step).run(
    hp,
    keys,
    num_steps=SWEEP_STEPS,
    chunk_size=SWEEP_CHUNK,
    data=data,
    checkpoint_dir=checkpoint_dir,
    max_chunks=max_chunks,
    show_progress=False,
  )
  w = res.state["w"]
  gather = lambda x: (
    multihost_utils.process_allgather(x, tiled=True)
    if not x.is_fully_addressable
    else x
  )
  return {
    "loss": np.asarray(res.history["loss"]).tolist(),
    "w": np.asarray(gather(w)).tolist(),
    "b": np.asarray(gather(res.state["b"])).tolist(),
    "steps_done": res.steps_done,
    "resumed_from": res.resumed_from,
    "mesh": dict(w.sharding.mesh.shape),
    "processes": sorted({d.process_index for d in w.sharding.device_set}),
  }


def _guarded(fn):
  """``fn()``, or the error it raised (the same on every process: it stops
  before collectives)."""
  try:
    return fn()
  except Exception as e:
    return {"error": f"{type(e).__name__}: {e}"}


# ------------------------------------------------------- what each process runs


def _first(base: str) -> dict:
  from jax.experimental import multihost_utils

  base = pathlib.Path(base)
  pid = jax.process_index()
  mesh = core.make_mesh()
  out = {
    "process": pid,
    "processes": jax.process_count(),
    "devices": jax.device_count(),
    "local_devices": jax.local_device_count(),
    "mesh": dict(mesh.shape),
  }

  # Data loading: each process reads its own rows only.
  data = dataset(BATCH)
  touched = []
  batch = core.load_global_batch(
    lambda rows: (
      touched.append(rows.tolist()) or {k: v[rows] for k, v in data.items()}
    ),
    BATCH,
    mesh,
  )
  out["rows_read"] = touched
  out["slice"] = [
    core.process_batch_slice(BATCH, mesh).start,
    core.process_batch_slice(BATCH, mesh).stop,
  ]
  out["global_shape"] = list(batch["x"].shape)
  rows = core.process_batch_indices(BATCH, mesh)
  # size from the processes
  inferred = core.host_local_batch_to_global(data["x"][rows], mesh)
  out["inferred_equal"] = bool(jnp.array_equal(inferred, batch["x"]))
  out["gathered_x"] = np.asarray(
    multihost_utils.process_allgather(batch["x"], tiled=True)
  ).tolist()
  out["local_shards"] = sorted(
    [s.index[0].start, s.index[0].stop, np.asarray(s.data).tolist()]
    for s in batch["x"].addressable_shards
  )

  # A data-parallel step on the global mesh (params replicated, batch sharded).
  params = core.replicate(linear_init(), mesh)
  losses = []
  rows = dataset(3 * BATCH)
  for step in range(3):
    batch = core.load_global_batch(
      lambda r, step=step: {k: v[step * BATCH + r] for k, v in rows.items()},
      BATCH,
      mesh,
    )
    params, loss = linear_step(params, batch)
    losses.append(float(loss))
  out["linear"] = {
    "w": np.asarray(params["w"]).tolist(),
    "b": float(params["b"]),
    "losses": losses,
    "replicated": params["w"].sharding.is_fully_replicated,
    "devices": len(params["w"].sharding.device_set),
  }

  # train_loop with orbax checkpoints: uninterrupted, and interrupted at
  # INTERRUPT_AT.
  state, history = run_train_loop(
    base / "uninterrupted" / f"p{pid}", STEPS, mesh, desc="multihost-train-bar"
  )
  out["uninterrupted"] = {"params": params_of(state), "history": history}
  _, history = run_train_loop(base / "resumed" / f"p{pid}", INTERRUPT_AT, mesh)
  out["interrupted_history"] = history

  # Process-0 writes: metrics and progress bars.
  with core.MetricWriter(
    base / "writes" / f"p{pid}", tensorboard=False
  ) as writer:
    for step in core.progress(range(2), desc="multihost-progress-bar"):
      writer.write(step, {"loss": 1.0 / (step + 1)})
  # results.json and plots (process-0 aware once core.results is).
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  core.save_figure(plt.figure(), base / "results" / f"p{pid}", "plot")
  core.write_results(
    base / "results" / f"p{pid}", metrics={"loss": 1.0}, config={"a": 1}
  )

  # A core.sweep grid over both processes: whole, and stopped after its first
  # chunk.
  out["sweep"] = _guarded(
    lambda: {
      "full": run_sweep_grid(),
      "part": run_sweep_grid(base / "sweep", max_chunks=1),
    }
  )
  return out


def _resumed(base: str) -> dict:
  base = pathlib.Path(base)
  pid = jax.process_index()
  mesh = core.make_mesh()
  read_log = []
  state, history = run_train_loop(
    base / "resumed" / f"p{pid}", STEPS, mesh, read_log=read_log
  )
  # The uninterrupted run's last checkpoint, restored explicitly into this new
  # job.
  with core.Checkpointer(base / "uninterrupted" / "ckpt") as ckpt:
    steps = ckpt.all_steps()
    restored = state.restore_from(
      ckpt.restore(None, model_state(mesh).checkpoint_tree())
    )
  return {
    "params": params_of(state),
    "history": history,
    "read_log": read_log,
    "checkpoint_steps": steps,
    "restored": params_of(restored),
    "restored_step": int(restored.step),
    "restored_sharding": str(restored.params["kernel"][...].sharding),
    "sweep": _guarded(lambda: {"resumed": run_sweep_grid(base / "sweep")}),
  }


# --------------------------------------------------- the jobs (once per module)


def _make_workdirs(base: pathlib.Path) -> None:
  for run in ("uninterrupted", "resumed"):
    (base / run / "ckpt").mkdir(parents=True)
    for pid in range(NUM_PROCESSES):
      (base / run / f"p{pid}").mkdir()
      (base / run / f"p{pid}" / "checkpoints").symlink_to(base / run / "ckpt")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
  base = tmp_path_factory.mktemp("multihost")
  _make_workdirs(base)
  return base


@pytest.fixture(scope="module")
def first_job(base):
  return multiprocess_util.run_function(
    f"{WORKER}:_first",
    {"base": str(base)},
    num_processes=NUM_PROCESSES,
    devices_per_process=DEVICES_PER_PROCESS,
    env={"JAXPAPERS_NO_PROGRESS": None},
  )


@pytest.fixture(scope="module")
def resumed_job(base, first_job):
  return multiprocess_util.run_function(
    f"{WORKER}:_resumed",
    {"base": str(base)},
    num_processes=NUM_PROCESSES,
    devices_per_process=DEVICES_PER_PROCESS,
  )


def test_the_processes_form_one_job_of_four_devices(first_job):
  for pid, run in enumerate(first_job):
    out = run.output
    assert (
      out["process"],
      out["processes"],
      out["devices"],
      out["local_devices"],
    ) == (
      pid,
      2,
      4,
      2,
    )
    assert out["mesh"] == {"data": 4}


def test_each_process_reads_only_its_own_rows_of_the_batch(first_job):
  x = dataset(BATCH)["x"]
  for pid, run in enumerate(first_job):
    out = run.output
    mine = list(range(pid * BATCH // 2, (pid + 1) * BATCH // 2))
    # one read, this process's half, never the rest
    assert out["rows_read"] == [mine]
    assert out["slice"] == [mine[0], mine[-1] + 1]
    assert out["global_shape"] == [BATCH, FEATURES] and out["inferred_equal"]
    np.testing.assert_array_equal(np.asarray(out["gathered_x"], np.float32), x)
    # its two devices hold two rows each, its own rows only
    assert [s[:2] for s in out["local_shards"]] == [
      [mine[0], mine[0] + 2],
      [mine[0] + 2, mine[0] + 4],
    ]
    for start, stop, values in out["local_shards"]:
      np.testing.assert_array_equal(
        np.asarray(values, np.float32), x[start:stop]
      )


def test_data_parallel_step_equals_single_process_step(first_job):
  # float64 numpy closed form of three SGD steps on the mean squared error
  rows = dataset(3 * BATCH)
  w, b = np.zeros(FEATURES), 0.0
  for step in range(3):
    x = rows["x"][step * BATCH : (step + 1) * BATCH].astype(np.float64)
    r = x @ w + b - rows["y"][step * BATCH : (step + 1) * BATCH]
    w, b = w - LR * 2 * x.T @ r / BATCH, b - LR * 2 * r.mean()
  # the same jitted step on a 4-device mesh of this one process
  mesh = core.make_mesh(4)
  params = core.replicate(linear_init(), mesh)
  losses = []
  for step in range(3):
    batch = core.shard_batch(
      {k: v[step * BATCH : (step + 1) * BATCH] for k, v in rows.items()}, mesh
    )
    params, loss = linear_step(params, batch)
    losses.append(float(loss))
  for run in first_job:
    out = run.output["linear"]
    # replicated over both processes
    assert out["replicated"] and out["devices"] == 4
    np.testing.assert_allclose(out["w"], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["b"], b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
      out["w"], np.asarray(params["w"]), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(out["losses"], losses, rtol=1e-6)
  assert first_job[0].output["linear"] == first_job[1].output["linear"]


def test_train_loop_equals_single_process_run(first_job):
  state, history = run_train_loop(None, STEPS, core.make_mesh(4))
  for run in first_job:
    out = run.output["uninterrupted"]
    for k, v in params_of(state).items():
      np.testing.assert_allclose(out["params"][k], v, rtol=1e-5, atol=1e-6)
    assert [r["step"] for r in out["history"]] == list(range(1, STEPS + 1))
    np.testing.assert_allclose(
      [r["train/loss"] for r in out["history"]],
      [r["train/loss"] for r in history],
      rtol=1e-5,
    )


def test_checkpoints_restore_into_a_new_two_process_job(
  base, first_job, resumed_job
):
  assert sorted(
    p.name
    for p in (base / "uninterrupted" / "ckpt").iterdir()
    if p.name.isdigit()
  ) == ["3", "6"]  # written once, collectively
  expected = first_job[0].output["uninterrupted"]["params"]
  for run in resumed_job:
    out = run.output
    assert (
      out["checkpoint_steps"] == [INTERRUPT_AT, STEPS]
      and out["restored_step"] == STEPS
    )
    assert out["restored"] == expected  # bit for bit
    # restored onto the global mesh
    assert "'data': 4" in out["restored_sharding"]


def test_interrupted_then_resumed_run_equals_uninterrupted(
  first_job, resumed_job
):
  uninterrupted = first_job[0].output["uninterrupted"]
  for pid, run in enumerate(resumed_job):
    out = run.output
    assert out["params"] == uninterrupted["params"]  # bit for bit
    # The records before the interruption are read back from
    # <workdir>/history.jsonl, which process 0 alone writes: here only process
    # 0's own workdir has them (a workdir shared by the hosts gives them to
    # every process).
    expected = (
      uninterrupted["history"]
      if pid == 0
      else uninterrupted["history"][INTERRUPT_AT:]
    )
    assert out["history"] == expected
    assert (
      first_job[pid].output["interrupted_history"]
      == uninterrupted["history"][:INTERRUPT_AT]
    )
    # the resumed job read only steps 3..5, each process only its half of each
    # batch
    half = BATCH // 2
    assert out["read_log"] == [
      list(range(s * BATCH + pid * half, s * BATCH + (pid + 1) * half))
      for s in range(INTERRUPT_AT, STEPS)
    ]


def _files(path: pathlib.Path) -> list[str]:
  if not path.exists():
    return []
  return sorted(
    str(p.relative_to(path))
    for p in path.rglob("*")
    if not str(p.relative_to(path)).startswith("checkpoints/")
  )


def test_only_process_0_writes_metrics_history_and_progress(
  base, first_job, resumed_job
):
  assert _files(base / "writes" / "p0") == ["metrics.jsonl"]
  assert core.read_metrics(base / "writes" / "p0") == [
    {"step": 0, "loss": 1.0},
    {"step": 1, "loss": 0.5},
  ]
  assert not (base / "writes" / "p1").exists()
  for run in ("uninterrupted", "resumed"):
    assert "history.jsonl" in _files(base / run / "p0")
    # the link to the shared folder only
    assert _files(base / run / "p1") == ["checkpoints"]
  history = core.read_metrics(base / "resumed" / "p0", "history.jsonl")
  # resumed, not duplicated
  assert [r["step"] for r in history] == list(range(1, STEPS + 1))
  err0, err1 = first_job[0].stderr, first_job[1].stderr
  assert "multihost-progress-bar" in err0 and "multihost-train-bar" in err0
  assert (
    "multihost-progress-bar" not in err1 and "multihost-train-bar" not in err1
  )


def _results_writers_are_process_0_aware(tmp_path, monkeypatch) -> bool:
  """Feature test: do ``write_results``/``save_figure`` write nothing on process
  1?

  Run here in one process with ``jax.process_index`` patched to 1, as the
  process-0 checks of the other writers are; when it holds, the two-process
  check below must hold too (and is then a real test, not an expected failure).
  """
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  with monkeypatch.context() as m:
    m.setattr(jax, "process_index", lambda *a, **k: 1)
    try:
      core.write_results(tmp_path / "probe", metrics={}, config={})
      core.save_figure(plt.figure(), tmp_path / "probe", "probe")
    finally:
      plt.close("all")
  return not _files(tmp_path / "probe")


def test_only_process_0_writes_results_json_and_plots(
  base, first_job, tmp_path, monkeypatch
):
  assert _files(base / "results" / "p0") == ["plot.png", "results.json"]
  assert _results_writers_are_process_0_aware(tmp_path, monkeypatch)
  assert _files(base / "results" / "p1") == []


def test_sweep_over_both_processes_equals_single_process_sweep(
  first_job, resumed_job
):
  for run in first_job + resumed_job:
    assert "error" not in run.output["sweep"], run.output["sweep"]["error"]
  # float64 numpy: every run's SGD on the shared batch, from its own initial
  # weights
  hp, keys, data = sweep_inputs()
  x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
  ref_loss = np.zeros((SWEEP_RUNS, SWEEP_STEPS))
  ref_w = np.zeros((SWEEP_RUNS, FEATURES))
  for i in range(SWEEP_RUNS):
    w = np.asarray(sweep_init(None, keys[i], None)["w"], np.float64)
    b = 0.0
    for t in range(SWEEP_STEPS):
      r = x @ w + b - y
      ref_loss[i, t] = np.mean(r**2)
      w, b = (
        w - hp["lr"][i] * 2 * x.T @ r / BATCH,
        b - hp["lr"][i] * 2 * r.mean(),
      )
    ref_w[i] = w
  # this process's sweep: a runs mesh of its own devices
  single = run_sweep_grid()
  np.testing.assert_allclose(single["loss"], ref_loss, rtol=1e-5)
  for pid in range(NUM_PROCESSES):
    full = first_job[pid].output["sweep"]["full"]
    # spans both
    assert full["mesh"] == {"runs": 4} and full["processes"] == [0, 1]
    np.testing.assert_allclose(full["loss"], single["loss"], rtol=1e-6)
    np.testing.assert_allclose(full["w"], single["w"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(full["w"], ref_w, rtol=1e-5, atol=1e-6)
    part = first_job[pid].output["sweep"]["part"]
    assert part["steps_done"] == SWEEP_CHUNK
    resumed = resumed_job[pid].output["sweep"]["resumed"]
    assert (resumed["resumed_from"], resumed["steps_done"]) == (
      SWEEP_CHUNK,
      SWEEP_STEPS,
    )
    # bit for bit
    assert resumed["loss"] == full["loss"] and resumed["w"] == full["w"]


# -------------------------------------------------- data helpers in one process


def test_one_process_reads_the_whole_batch_on_the_same_code_path():
  mesh = core.make_mesh()  # the 8 devices of this test process
  data = dataset(16)
  asked = []
  batch = core.load_global_batch(
    lambda r: asked.append(r) or {k: v[r] for k, v in data.items()}, 16, mesh
  )
  np.testing.assert_array_equal(asked[0], np.arange(16))
  assert core.process_batch_slice(16, mesh) == slice(0, 16)
  expected = core.shard_batch(data, mesh)
  for k in data:
    assert batch[k].sharding == expected[k].sharding
    np.testing.assert_array_equal(np.asarray(batch[k]), data[k])
  assert core.host_local_batch_to_global({}, mesh) == {}


def test_data_helpers_reject_bad_input():
  mesh = core.make_mesh(4)
  for bad in (0, 6, 4.0, True, None):
    with pytest.raises(
      ValueError, match=("global_batch_size must be a positive int divisible")
    ):
      core.process_batch_indices(bad, mesh)
  with pytest.raises(TypeError, match="Mesh or NamedSharding"):
    core.process_batch_indices(8, "data")
  with pytest.raises(ValueError, match="must hold this process's 8 rows"):
    core.host_local_batch_to_global({"x": np.zeros((6, 2))}, mesh, 8)
  with pytest.raises(ValueError, match="got a scalar"):
    core.host_local_batch_to_global({"x": np.zeros(())}, mesh)
  # another process's rows are never requested: the reader sees this process's
  # only
  assert core.load_global_batch(
    lambda r: {"n": np.full(len(r), len(r))}, 8, mesh
  )["n"].shape == (8,)


# ---------------------------------------------------------- the launcher itself


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  try:  # a zombie is gone too, waiting for its parent to reap it
    return (
      pathlib.Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
      != "Z"
    )
  except OSError:
    return True


def _child_then(action: str, tmp_path: pathlib.Path) -> list[str]:
  """A process that starts a long-lived child, records its pid, then does
  ``action``."""
  code = (
    "import os, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; "
    "time.sleep(120)'])\n"
    f"open(os.path.join({str(tmp_path)!r}, 'child_' + "
    "os.environ['JAX_PROCESS_ID']), 'w').write(str(child.pid))\n"
    "print('process', os.environ['JAX_PROCESS_ID'], 'of', "
    "os.environ['JAX_NUM_PROCESSES'], 'at', "
    "os.environ['JAX_COORDINATOR_ADDRESS'], flush=True)\n"
    f"{action}\n"
  )
  return [sys.executable, "-c", code]


def _wait_for_files(paths, seconds=30.0):
  import time

  deadline = time.monotonic() + seconds
  while (
    not all(p.exists() and p.read_text() for p in paths)
    and time.monotonic() < deadline
  ):
    time.sleep(0.05)


def test_launcher_kills_every_process_group_when_one_fails(tmp_path):
  action = (
    "time.sleep(120) if os.environ['JAX_PROCESS_ID'] == '0' else "
    "(time.sleep(1), sys.exit('process 1 gives up'))"
  )
  with pytest.raises(multiprocess_util.MultiprocessError) as err:
    multiprocess_util.launch(
      _child_then(action, tmp_path), num_processes=2, timeout=60
    )
  text = str(err.value)
  assert "2-process job a process failed" in text
  assert (
    "process 0: exit status -9" in text and "process 1: exit status 1" in text
  )
  assert "process 1 gives up" in text  # each log is shown
  assert "process 0 of 2 at 127.0.0.1:" in text and "process 1 of 2" in text
  pids = [int((tmp_path / f"child_{i}").read_text()) for i in range(2)]
  # the children of both processes are gone
  assert not any(_alive(pid) for pid in pids)


def test_launcher_times_out_and_leaves_nothing_running(tmp_path):
  with pytest.raises(
    multiprocess_util.MultiprocessError, match=("timed out after 2 s")
  ):
    multiprocess_util.launch(
      _child_then("time.sleep(120)", tmp_path), num_processes=2, timeout=2
    )
  pids = [int((tmp_path / f"child_{i}").read_text()) for i in range(2)]
  assert not any(_alive(pid) for pid in pids)
  with pytest.raises(ValueError, match="num_processes"):
    multiprocess_util.launch(["true"], num_processes=0)
  with pytest.raises(ValueError, match="module:function"):
    multiprocess_util.run_function("no_function_here")


# ----------------------------------------------- a real binary through core.app

LOGSTOP = [
  "-m",
  "experiments.logstop.main",
  "--config=experiments/logstop/configs/smoke.py",
  "--config.detector_steps=10",
  "--config.num_templates=1",
  "--config.sequences_per_template=8",
  "--config.retrieval_templates=1",
  "--config.db_size=16",
]


@pytest.mark.slow
def test_smoke_binary_on_two_processes_matches_one_process(tmp_path):
  """The logstop smoke binary through ``core.app``: 2 processes x 2 devices vs 1
  process."""
  from concurrent.futures import ThreadPoolExecutor

  def run(n):  # the two jobs at once: three processes keep two cores busy
    return multiprocess_util.launch(
      [sys.executable, *LOGSTOP, f"--workdir={tmp_path / f'{n}proc'}"],
      num_processes=n,
      devices_per_process=4 // n,
      timeout=600,
    )

  with ThreadPoolExecutor(2) as pool:
    jobs = dict(zip((1, 2), pool.map(run, (1, 2))))
  runs = {}
  for n, procs in jobs.items():
    assert f"process {n - 1} of {n}" in procs[-1].stderr
    assert "global devices: 4 x cpu" in procs[-1].stderr
    runs[n] = json.loads((tmp_path / f"{n}proc" / "results.json").read_text())
  assert runs[2]["environment"]["process_count"] == 2
  assert runs[1]["metrics"] == runs[2]["metrics"]
  assert runs[1]["metrics"]  # something was measured
