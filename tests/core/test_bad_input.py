"""Bad-input battery for jaxpapers.core (eager and under jax.jit), plus degenerate inputs."""

import dataclasses
import pathlib
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import core
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

HOST = "host-side (files, configs or devices), never traced"


@dataclasses.dataclass
class _Cfg:
  steps: int
  lr: float = 0.1
  name: str = "run"
  dims: tuple = (1, 2)
  seed: int | None = None


def _tmp() -> pathlib.Path:
  return pathlib.Path(tempfile.mkdtemp(prefix="badinput_core_"))


def _restore_missing_step():
  with core.Checkpointer(_tmp() / "ck", async_save=False) as c:
    c.save(1, {"w": jnp.ones(3)})
    c.restore(7, {"w": jnp.ones(3)})


def _restore_corrupt_step():
  d = _tmp() / "ck"
  with core.Checkpointer(d, async_save=False) as c:
    c.save(2, {"w": jnp.ones(3)})
  for f in (d / "2").rglob("*"):
    if f.is_file():
      f.write_bytes(f.read_bytes()[:5])  # truncated
  with core.Checkpointer(d) as c:
    c.restore(2, {"w": jnp.ones(3)})


def _restore_garbage_dir():
  d = _tmp() / "ck"
  (d / "4").mkdir(parents=True)
  (d / "4" / "junk").write_text("not a checkpoint")
  with core.Checkpointer(d) as c:
    c.restore(None, {"w": jnp.ones(3)})


def _restore_empty_dir():
  with core.Checkpointer(_tmp() / "ck") as c:
    c.restore(None, {"w": jnp.ones(3)})


def _shard_indivisible():
  core.shard_batch({"x": np.zeros((3, 2))}, core.make_mesh())


CASES = [
    Case("core.resolve_data_dir", core.resolve_data_dir, ("/nonexistent/dir",),
         kwargs=dict(subdir="hypergraph"), error=FileNotFoundError,
         match="data_dir argument '/nonexistent/dir' was given", jit=None, jit_reason=HOST,
         id="data-dir-missing"),
    Case("core.resolve_data_dir", core.resolve_data_dir, ("/nonexistent/dir",),
         kwargs=dict(subdir="hypergraph", required=False), error=FileNotFoundError,
         match="never replaced", jit=None, jit_reason=HOST, id="data-dir-missing-not-required"),
    Case("core.resolve_data_dir", core.resolve_data_dir, (3,), error=TypeError,
         match="data_dir must be a path", jit=None, jit_reason=HOST, id="data-dir-int"),
    Case("core.config_to_dataclass", core.config_to_dataclass, ({"steps": "ten"}, _Cfg),
         error=TypeError, match=r"_Cfg.steps must be of type int, got str 'ten'", jit=None,
         jit_reason=HOST, id="config-steps-str"),
    Case("core.config_to_dataclass", core.config_to_dataclass, ({"steps": 3, "lr": "fast"}, _Cfg),
         error=TypeError, match=r"_Cfg.lr must be of type float", jit=None, jit_reason=HOST,
         id="config-lr-str"),
    Case("core.config_to_dataclass", core.config_to_dataclass, ({"steps": True}, _Cfg),
         error=TypeError, match=r"_Cfg.steps must be of type int, got bool", jit=None,
         jit_reason=HOST, id="config-steps-bool"),
    Case("core.config_to_dataclass", core.config_to_dataclass, ({"steps": 3, "stpes": 4}, _Cfg),
         match=r"Unknown config field\(s\) \['stpes'\]", jit=None, jit_reason=HOST,
         id="config-unknown"),
    Case("core.config_to_dataclass", core.config_to_dataclass, ({"lr": 0.1}, _Cfg),
         match=r"Missing required config field\(s\) \['steps'\]", jit=None, jit_reason=HOST,
         id="config-missing"),
    Case("core.validate_choice", core.validate_choice, ("adamw",),
         kwargs=dict(name="optimizer", allowed=("sgd", "adam")),
         match=r"optimizer must be one of \['sgd', 'adam'\], got 'adamw'", jit=None,
         jit_reason=HOST, id="choice"),
    Case("core.validate_choice", core.validate_choice, (True,),
         kwargs=dict(name="mode", allowed=(0, 1)), match="mode must be one of", jit=None,
         jit_reason=HOST, id="choice-bool-is-not-1"),
    Case("core.validate_positive", core.validate_positive, (float("nan"),),
         kwargs=dict(name="lr"), match="lr must be a finite number", jit=None, jit_reason=HOST,
         id="positive-nan"),
    Case("core.validate_positive", core.validate_positive, (float("inf"),),
         kwargs=dict(name="lr"), match="lr must be a finite number", jit=None, jit_reason=HOST,
         id="positive-inf"),
    Case("core.validate_positive", core.validate_positive, (0,), kwargs=dict(name="steps"),
         match="steps must be > 0", jit=None, jit_reason=HOST, id="positive-zero"),
    Case("core.Checkpointer", _restore_missing_step, error=FileNotFoundError,
         match=r"no checkpoint for step 7 in .*ck; saved steps: \[1\]", jit=None,
         jit_reason=HOST, id="ckpt-missing-step"),
    Case("core.Checkpointer", _restore_corrupt_step,
         match=r"could not restore checkpoint step 2 from .*ck/2", jit=None, jit_reason=HOST,
         id="ckpt-truncated"),
    Case("core.Checkpointer", _restore_garbage_dir,
         match=r"could not restore checkpoint step 4 from .*ck/4", jit=None, jit_reason=HOST,
         id="ckpt-garbage-dir"),
    Case("core.Checkpointer", _restore_empty_dir, error=FileNotFoundError,
         match="no checkpoint to restore in", jit=None, jit_reason=HOST, id="ckpt-empty"),
    Case("core.Checkpointer", lambda: core.Checkpointer(_tmp(), max_to_keep=0),
         match="max_to_keep must be >= 1", jit=None, jit_reason=HOST, id="ckpt-max-to-keep"),
    Case("core.make_mesh", core.make_mesh, (0,), match=r"num_devices must be an int in \[1,",
         jit=None, jit_reason=HOST, id="mesh-zero"),
    Case("core.shard_batch", _shard_indivisible, match="must be divisible by the 8 devices",
         jit=None, jit_reason=HOST, id="shard-indivisible"),
    Case("core.read_results", lambda: core.read_results(_tmp() / "nope"),
         error=FileNotFoundError, match="results.json", jit=None, jit_reason=HOST,
         id="read-results-missing"),
    Case("core.save_figure", lambda: core.save_figure(None, _tmp(), "plots/loss.png"),
         match="name must be a bare file stem", jit=None, jit_reason=HOST, id="save-figure-name"),
    Case("core.train_loop", lambda: core.train_loop(None, None, None, num_steps=-1),
         match="num_steps must be >= 0", jit=None, jit_reason=HOST, id="train-loop-steps"),
    Case("core.check_array", core.check_array, (np.zeros(3, np.float32), "x"),
         kwargs=dict(ndim=2), match=r"x must have rank 2, got shape \(3,\)", id="check-array-rank"),
    Case("core.check_array", core.check_array, (np.zeros(3, np.float32), "ids"),
         kwargs=dict(dtype="int"), error=TypeError, match="ids must have a integer dtype",
         id="check-array-dtype"),
    Case("core.check_int", core.check_int, (2.5, "k"), error=TypeError,
         match="k must be an int, got float", jit=None, jit_reason="checks static arguments",
         id="check-int"),
    Case("core.check_float", core.check_float, (float("nan"), "temperature"),
         match="temperature must be a finite number", jit=None,
         jit_reason="checks static arguments", id="check-float-nan"),
    Case("core.check_values", core.check_values,
         (np.array([True, False]), "labels must be >= 0"), match="labels must be >= 0",
         jit="nan", jit_check=lambda ok: np.testing.assert_equal(np.asarray(ok), False),
         id="check-values"),
    Case("core.poison", core.poison, (np.ones(2, np.float32), np.float32(1.0)), error=TypeError,
         match="ok must be a boolean scalar", id="poison-ok-float"),
    Case("core.check_path", core.check_path, (3, "path"), error=TypeError,
         match="path must be a path", jit=None, jit_reason=HOST, id="check-path"),
    Case("core.process_batch_indices", lambda: core.process_batch_indices(6, core.make_mesh(4)),
         match="global_batch_size must be a positive int divisible by the 4 devices", jit=None,
         jit_reason=HOST, id="batch-indices-indivisible"),
    Case("core.process_batch_slice", lambda: core.process_batch_slice(8, "data"),
         error=TypeError, match="mesh must be a jax.sharding.Mesh or NamedSharding", jit=None,
         jit_reason=HOST, id="batch-slice-mesh"),
    Case("core.host_local_batch_to_global",
         lambda: core.host_local_batch_to_global({"x": np.zeros((6, 2))}, core.make_mesh(4), 8),
         match=r"local_batch leaf \['x'\] has shape \(6, 2\).*this process's 8 rows", jit=None,
         jit_reason=HOST, id="local-batch-rows"),
    Case("core.load_global_batch",
         lambda: core.load_global_batch(lambda r: np.zeros((len(r) + 1, 2)), 8, core.make_mesh(4)),
         match="must hold this process's 8 rows", jit=None, jit_reason=HOST,
         id="load-batch-rows"),
]

EXEMPT = {
    "abstract_like": "accepts any pytree: array leaves become ShapeDtypeStructs, others pass",
    "data_sharding": "takes a Mesh from make_mesh (validated there); no user data",
    "replicated_sharding": "takes a Mesh from make_mesh (validated there); no user data",
    "replicate": "jax.device_put of any pytree over a Mesh from make_mesh; no value to check",
    "progress": "a tqdm progress bar; its arguments are tqdm's and tqdm checks them",
    "environment_info": "takes no arguments",
    "maybe_initialize_distributed": "takes no arguments (reads the environment)",
    "write_results": "serialises any metrics/config (unknown objects are written as repr)",
    "TrainState": "a container built by TrainState.create from an NNX model and optax tx",
    "is_concrete": "a predicate defined for every pytree",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(core, CASES, EXEMPT)


def test_config_types_accepted():
  """Legal values of every annotated kind pass (numpy ints for int, ints for float, None)."""
  cfg = core.config_to_dataclass({"steps": np.int64(3), "lr": 1, "dims": [4], "seed": None},
                                 _Cfg)
  assert cfg.steps == 3 and cfg.lr == 1 and cfg.seed is None
  assert core.validate_positive(0.0, name="x", allow_zero=True) == 0.0


def test_explicit_data_dir_is_used(tmp_path):
  (tmp_path / "hg").mkdir()
  assert core.resolve_data_dir(tmp_path, subdir="hg") == (tmp_path / "hg").resolve()


def test_poison_and_check_values_under_jit():
  """The policy's two halves: eager raise, and NaN / -1 outputs from a traced failure."""

  @jax.jit
  def f(x, labels):
    ok = core.check_values(jnp.all(labels >= 0), "labels must be >= 0")
    return core.poison((x * 2.0, labels), ok)

  out, lab = f(jnp.ones(2), jnp.array([0, -1]))
  assert np.all(np.isnan(out)) and np.all(np.asarray(lab) == -1)
  out, lab = f(jnp.ones(2), jnp.array([0, 1]))
  np.testing.assert_array_equal(out, [2.0, 2.0])
  with pytest.raises(ValueError, match="labels must be >= 0"):
    core.check_values(jnp.array([0, -1]) >= 0, "labels must be >= 0")
