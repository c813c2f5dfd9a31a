"""core.app: flags, distributed start-up on request only, workdir paths,
process-0 writes."""

import json
import logging
import os
import pathlib
import socket
import subprocess
import sys
import textwrap

import jax
import pytest
from absl import app as absl_app
from absl import flags
from etils import epath

from jaxpapers import core
from jaxpapers.core import app, distributed, host_memory
from tests import multiprocess_util

ROOT = pathlib.Path(__file__).resolve().parents[2]
_CLUSTER_VARS = (
  "JAXPAPERS_DISTRIBUTED",
  "JAX_COORDINATOR_ADDRESS",
  "JAX_NUM_PROCESSES",
  "JAX_PROCESS_ID",
  "SLURM_JOB_ID",
  "SLURM_STEP_NODELIST",
  "SLURM_NTASKS",
  "SLURM_PROCID",
  "SLURM_LOCALID",
  "OMPI_MCA_orte_hnp_uri",
  "OMPI_COMM_WORLD_SIZE",
  "TPU_PROCESS_ADDRESSES",
  "TPU_WORKER_HOSTNAMES",
  "KUBERNETES_SERVICE_HOST",
  "JOB_COMPLETION_INDEX",
)
SLURM_2 = {
  "SLURM_JOB_ID": "7",
  "SLURM_STEP_NODELIST": "node[1-2]",
  "SLURM_NTASKS": "2",
  "SLURM_PROCID": "1",
  "SLURM_LOCALID": "0",
}


@pytest.fixture
def config_file(tmp_path):
  path = tmp_path / "tiny_config.py"
  path.write_text(
    textwrap.dedent("""
      import ml_collections

      def get_config():
        return ml_collections.ConfigDict({"name": "tiny", "seed": 0, "steps": 3})
  """)
  )
  return str(path)


@pytest.fixture
def clean_env(monkeypatch):
  """No cluster variables, no earlier initialisation, initialize() recorded not
  run."""
  for var in _CLUSTER_VARS:
    monkeypatch.delenv(var, raising=False)
  monkeypatch.setattr(distributed, "_initialized", False)
  calls = []
  monkeypatch.setattr(
    jax.distributed, "initialize", lambda **kw: calls.append(kw)
  )
  monkeypatch.setattr(jax.distributed, "is_initialized", lambda: False)
  return calls


def parse(config_file, *args):
  argv = ["prog", f"--config={config_file}", *args]
  fv = flags.FlagValues()
  app.define_flags(fv, argv=argv)
  fv(argv)
  return fv


def run_main(fv, target=None):
  seen = []
  app.main(
    ["prog"],
    target or (lambda config, workdir: seen.append((config, workdir))),
    flag_values=fv,
  )
  return seen


def test_flags_parse_overrides_and_the_config_is_locked(config_file, tmp_path):
  fv = parse(config_file, f"--workdir={tmp_path}", "--config.seed=3")
  assert fv.config.seed == 3 and fv.config.steps == 3
  assert fv.config.is_locked
  with pytest.raises(AttributeError):
    fv.config.sede = 4  # a misspelt field is an error, not a new field
  with pytest.raises(AttributeError, match="sede"):
    parse(config_file, f"--workdir={tmp_path}", "--config.sede=4")
  with pytest.raises(flags.IllegalFlagValueError, match="workdir"):
    parse(config_file).validate_all_flags()  # --workdir is required
  with pytest.raises(flags.IllegalFlagValueError):
    parse(config_file, f"--workdir={tmp_path}", "--distributed=maybe")


def test_main_passes_config_and_an_epath_workdir(
  config_file, tmp_path, clean_env
):
  fv = parse(config_file, f"--workdir={tmp_path / 'run'}", "--config.seed=5")
  [(config, workdir)] = run_main(fv)
  assert config.seed == 5
  assert isinstance(workdir, epath.Path)
  # pathlib code sees the same folder
  assert pathlib.Path(workdir) == tmp_path / "run"
  assert not (tmp_path / "run").exists()  # the app itself writes nothing
  with pytest.raises(absl_app.UsageError, match="positional"):
    app.main(["prog", "extra"], lambda c, w: None, flag_values=fv)


def test_module_name_target_is_imported_inside_main(
  config_file, tmp_path, clean_env, monkeypatch
):
  (tmp_path / "tiny_experiment_mod.py").write_text(
    textwrap.dedent("""
      import jax
      CALLS = []

      def train_and_evaluate(config, workdir):
        CALLS.append((config.seed, str(workdir)))
        return {"ignored": 1}  # absl must not see this as an exit status
  """)
  )
  monkeypatch.syspath_prepend(str(tmp_path))
  monkeypatch.delitem(sys.modules, "tiny_experiment_mod", raising=False)
  fv = parse(config_file, f"--workdir={tmp_path}", "--distributed=on")
  order = []
  monkeypatch.setattr(
    jax.distributed, "initialize", lambda **kw: order.append("init")
  )
  real_import = app.importlib.import_module
  monkeypatch.setattr(
    app.importlib,
    "import_module",
    lambda name: order.append(name) or real_import(name),
  )
  assert app.main(["prog"], "tiny_experiment_mod", flag_values=fv) is None
  # imported after the distributed start-up
  assert order == ["init", "tiny_experiment_mod"]
  assert sys.modules["tiny_experiment_mod"].CALLS == [(0, str(tmp_path))]
  assert (
    app.resolve_target("experiments.logstop.train").__name__
    == "train_and_evaluate"
  )
  with pytest.raises(TypeError, match="no callable"):
    app.resolve_target("json:nothing_here")
  with pytest.raises(TypeError, match="module name"):
    app.resolve_target(3)


@pytest.mark.parametrize(
  "args, env, expected",
  [
    ((), {}, None),  # laptop: auto finds nothing
    (("--distributed=on",), {}, {}),  # asked: JAX detects the rest
    (("--distributed=off",), SLURM_2, None),  # off beats a detected job
    ((), SLURM_2, {}),  # auto inside a 2-task srun
    # a one-task job needs no runtime
    ((), dict(SLURM_2, SLURM_NTASKS="1"), None),
    ((), {"JAXPAPERS_DISTRIBUTED": "1"}, {}),  # the env var still works
    # the flag wins
    (("--distributed=off",), {"JAXPAPERS_DISTRIBUTED": "1"}, None),
    (
      (),
      {
        "JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234",
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": ("1"),
      },
      {
        "coordinator_address": "10.0.0.1:1234",
        "num_processes": 2,
        "process_id": 1,
      },
    ),
    (
      (),
      {
        "OMPI_MCA_orte_hnp_uri": "1.0;tcp://10.0.0.1:1",
        "OMPI_COMM_WORLD_SIZE": ("4"),
      },
      {},
    ),
    ((), {"TPU_WORKER_HOSTNAMES": "t0,t1"}, {}),
    ((), {"TPU_WORKER_HOSTNAMES": "t0"}, None),
  ],
)
def test_main_initialises_distributed_only_when_asked(
  config_file, tmp_path, clean_env, monkeypatch, args, env, expected
):
  for k, v in env.items():
    monkeypatch.setenv(k, v)
  run_main(parse(config_file, f"--workdir={tmp_path}", *args))
  assert clean_env == ([] if expected is None else [expected])


def test_explicit_env_values_are_checked(clean_env):
  with pytest.raises(ValueError, match="JAX_NUM_PROCESSES"):
    distributed.explicit_settings({"JAX_NUM_PROCESSES": "two"})
  with pytest.raises(ValueError, match="JAX_PROCESS_ID"):
    distributed.explicit_settings(
      {"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": ("2")}
    )
  with pytest.raises(ValueError, match="JAXPAPERS_DISTRIBUTED"):
    distributed.resolve_mode(None, {"JAXPAPERS_DISTRIBUTED": "sometimes"})
  assert distributed.detect_cluster({}) is None


def test_failed_start_up_says_what_to_set(clean_env, monkeypatch):
  def fail(**kw):
    raise ValueError("coordinator_address should be defined.")

  monkeypatch.setattr(jax.distributed, "initialize", fail)
  with pytest.raises(RuntimeError, match="JAX_COORDINATOR_ADDRESS"):
    distributed.initialize("on", environ={})
  with pytest.raises(
    RuntimeError, match=("slurm job; run with --distributed=off")
  ):
    distributed.initialize("auto", environ=SLURM_2)
  assert not distributed.initialize("off", environ=SLURM_2).initialized


def test_importing_experiments_initialises_nothing(clean_env, monkeypatch):
  import importlib

  import experiments
  import experiments.soda.main

  monkeypatch.setenv("JAXPAPERS_DISTRIBUTED", "1")
  importlib.reload(experiments)
  importlib.reload(sys.modules["experiments.soda.main"])
  assert clean_env == []


def test_binaries_import_without_starting_a_backend():
  """After importing every main (with the old opt-in variable set), a
  distributed start-up is still possible: nothing touched a JAX backend or the
  runtime on import."""
  code = textwrap.dedent(f"""
      import importlib, jax
      for p in ("soda", "panda", "flashssm3d", "dual_rate", "logstop", "margins", "locos"):
        importlib.import_module(f"experiments.{{p}}.main")
      assert not jax.distributed.is_initialized()
      jax.distributed.initialize("127.0.0.1:{multiprocess_util.free_port()}", num_processes=1, process_id=0)
      print("devices", jax.device_count())
      jax.distributed.shutdown()
  """)
  env = dict(os.environ, JAXPAPERS_DISTRIBUTED="1", JAX_PLATFORMS="cpu")
  proc = subprocess.run(
    [sys.executable, "-c", code],
    cwd=ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "devices" in proc.stdout


def test_remote_workdir_is_never_a_local_folder(
  config_file, tmp_path, clean_env, monkeypatch
):
  monkeypatch.chdir(tmp_path)
  path = app.resolve_workdir("gs://bucket/run", remote_ok=True)
  assert isinstance(path, epath.Path) and str(path) == "gs://bucket/run"
  with pytest.raises(ValueError, match="remote path"):
    app.resolve_workdir("gs://bucket/run")
  with pytest.raises(ValueError, match="no such scheme"):
    app.resolve_workdir("ftp://host/run", remote_ok=True)
  fv = parse(config_file, "--workdir=gs://bucket/run")
  with pytest.raises(absl_app.UsageError, match="remote path"):
    run_main(fv, target=lambda c, w: pytest.fail("ran with a remote workdir"))
  # no ./gs: folder
  assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny_config.py"]
  assert app.is_remote("s3://b/k") and not app.is_remote("runs/x")


def test_local_workdir_forms(tmp_path, monkeypatch):
  monkeypatch.setenv("HOME", str(tmp_path))
  assert pathlib.Path(app.resolve_workdir("~/run")) == tmp_path / "run"
  assert str(app.resolve_workdir(f"file://{tmp_path}/r")) == f"{tmp_path}/r"
  assert str(app.resolve_workdir(pathlib.Path("runs/x"))) == "runs/x"
  for bad in ("", "  ", None, 3):
    with pytest.raises(ValueError, match="workdir"):
      app.resolve_workdir(bad)


def test_startup_log_names_host_process_devices_mesh(
  config_file, tmp_path, clean_env, caplog
):
  fv = parse(config_file, f"--workdir={tmp_path}")
  with caplog.at_level(logging.INFO, logger="absl"):
    run_main(fv)
  text = caplog.text
  n = jax.device_count()
  assert f"host {socket.gethostname()}, process 0 of 1, backend cpu" in text
  assert (
    f"local devices: {n} x cpu" in text and f"global devices: {n} x cpu" in text
  )
  assert f"mesh {{'data': {n}}}" in text
  assert f"jax {jax.__version__}" in text and "flax" in text and "optax" in text
  assert f"workdir {tmp_path}" in text and "tiny_config.py (name tiny)" in text


def test_process_other_than_zero_writes_nothing(
  config_file, tmp_path, clean_env, monkeypatch, capsys
):
  monkeypatch.setattr(jax, "process_index", lambda *a, **k: 1)
  monkeypatch.delenv("JAXPAPERS_NO_PROGRESS", raising=False)
  assert not core.is_main_process()
  out = tmp_path / "run"

  def experiment(config, workdir):
    with core.MetricWriter(workdir) as writer:
      for step in core.progress(range(config.steps), desc="steps"):
        writer.write(step, {"loss": 1.0 / (step + 1)})

  run_main(parse(config_file, f"--workdir={out}"), target=experiment)
  assert not out.exists()
  assert "steps" not in capsys.readouterr().err
  monkeypatch.setattr(jax, "process_index", lambda *a, **k: 0)
  run_main(parse(config_file, f"--workdir={out}"), target=experiment)
  assert [r["step"] for r in core.read_metrics(out)] == [0, 1, 2]


def test_smoke_binary_end_to_end_through_the_app(tmp_path):
  """The cheapest real binary (logstop smoke, shrunk further by config
  overrides)."""
  workdir = tmp_path / "logstop"
  cmd = [
    sys.executable,
    "-m",
    "experiments.logstop.main",
    "--config=experiments/logstop/configs/smoke.py",
    f"--workdir={workdir}",
    "--config.detector_steps=10",
    "--config.num_templates=1",
    "--config.sequences_per_template=8",
    "--config.retrieval_templates=1",
    "--config.db_size=16",
  ]
  env = dict(os.environ, JAX_PLATFORMS="cpu", JAXPAPERS_NO_PROGRESS="1")
  env.pop("JAXPAPERS_DISTRIBUTED", None)
  proc = subprocess.run(
    cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "process 0 of 1" in proc.stderr
  if host_memory.glibc_linux():
    # applied before anything started a backend (an import-time array would make
    # it refuse)
    assert "host memory reuse: on" in proc.stderr
  results = json.loads((workdir / "results.json").read_text())
  # the override reached the locked config
  assert results["config"]["detector_steps"] == 10
  assert "matching/overall" in results["metrics"]


def test_two_processes_form_one_job_and_only_process_0_writes(tmp_path):
  """Two local processes started by the app from JAX_* variables share one
  4-device mesh."""
  (tmp_path / "two_proc_experiment.py").write_text(
    textwrap.dedent("""
      import jax, jax.numpy as jnp, numpy as np
      from jaxpapers import core

      def train_and_evaluate(config, workdir):
        mesh = core.make_mesh()
        local = np.full((jax.local_device_count(),), jax.process_index() + 1.0, np.float32)
        x = jax.make_array_from_process_local_data(core.data_sharding(mesh), local)
        total = float(jax.jit(jnp.sum)(x))
        with core.MetricWriter(workdir, tensorboard=False) as writer:
          for step in core.progress(range(2), desc="bar-of-process"):
            writer.write(step, {"total": total})
        print("RESULT", jax.process_index(), jax.device_count(), total, flush=True)
  """)
  )
  (tmp_path / "cfg.py").write_text(
    "import ml_collections\n\ndef get_config():\n  return "
    "ml_collections.ConfigDict()\n"
  )
  workdir = tmp_path / "run"
  outs = [
    (r.stdout, r.stderr)
    for r in multiprocess_util.launch(
      [
        sys.executable,
        "-c",
        "from jaxpapers.core import app; app.run('two_proc_experiment')",
        f"--config={tmp_path / 'cfg.py'}",
        f"--workdir={workdir}",
      ],
      num_processes=2,
      devices_per_process=2,
      timeout=120,
      env={
        "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}",
        "JAXPAPERS_NO_PROGRESS": None,
      },
    )
  ]
  # process i holds 2 devices of value i + 1: 2 * 1 + 2 * 2 = 6 on both
  assert [o.split("RESULT ")[1].split() for o, _ in outs] == [
    ["0", "4", "6.0"],
    ["1", "4", "6.0"],
  ]
  assert (
    "process 1 of 2" in outs[1][1] and "global devices: 4 x cpu" in outs[1][1]
  )
  assert "bar-of-process" in outs[0][1] and "bar-of-process" not in outs[1][1]
  assert core.read_metrics(workdir) == [
    {"step": 0, "total": 6.0},
    {"step": 1, "total": 6.0},
  ]


@pytest.mark.parametrize(
  ("override", "field"),
  [
    ("--config.lr=-0.01", "config.lr"),
    ("--config.opt.adamw_lrs=(0.01,-0.1)", "config.opt.adamw_lrs"),
  ],
)
def test_a_negative_learning_rate_stops_the_run_before_it_starts(
  tmp_path, clean_env, override, field
):
  path = tmp_path / "lr_config.py"
  path.write_text(
    textwrap.dedent("""
      import ml_collections

      def get_config():
        return ml_collections.ConfigDict(
          {"lr": 0.01, "opt": {"adamw_lrs": (0.01, 0.1), "muon_lrs": ()}, "space": {"lr": ("loguniform", 1e-3, 3e-2)}}
        )
  """)
  )
  # valid as written
  assert len(run_main(parse(str(path), f"--workdir={tmp_path / 'ok'}"))) == 1
  fv = parse(str(path), f"--workdir={tmp_path / 'run'}", override)
  with pytest.raises(
    ValueError,
    match=(rf"{field} must be a learning rate \(a finite number > 0\)"),
  ):
    run_main(
      fv, target=lambda c, w: pytest.fail("the experiment must not start")
    )


def test_restore_cells_adds_a_snapshot_before_the_run_and_keeps_newer_cells(
  config_file, tmp_path, clean_env
):
  elsewhere = core.CellStore(tmp_path / "elsewhere" / "cells")
  elsewhere.put("a/1", {"acc": 0.5})
  elsewhere.put("b", [1, 2])
  snapshot = tmp_path / "snap" / "cells.json.xz"
  assert elsewhere.save_snapshot(snapshot) == 2
  run = tmp_path / "run"
  # the workdir's own cell is the newer state
  core.CellStore(run / "cells").put("b", [3])
  fv = parse(config_file, f"--workdir={run}", f"--restore_cells={snapshot}")
  seen = run_main(
    fv, lambda config, workdir: core.CellStore(workdir / "cells").to_dict()
  )
  # the target ran (run_main records only with the default target)
  assert seen == []
  assert core.CellStore(run / "cells").to_dict() == {
    "a/1": {"acc": 0.5},
    "b": [3],
  }
  (tmp_path / "bad.json").write_text('{"cells": {}}')
  fv = parse(
    config_file, f"--workdir={run}", f"--restore_cells={tmp_path / 'bad.json'}"
  )
  with pytest.raises(ValueError, match="not a cell snapshot"):
    run_main(fv)
