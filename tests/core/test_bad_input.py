"""Bad-input battery for jaxpapers.core (eager and under jax.jit), plus
degenerate inputs."""

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
STATS = "NumPy/SciPy statistics on results, off the hot path; never traced"


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


def _corrupt_metrics():
  d = _tmp()
  (d / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "lo')
  return core.read_metrics(d)


def _metric_writer_step(step):
  with core.MetricWriter(_tmp(), tensorboard=False) as w:
    w.write(step, {"loss": 1.0})


def _metric_writer_metrics():
  with core.MetricWriter(_tmp(), tensorboard=False) as w:
    w.write(1, [1.0, 2.0])


_CLAIM = dict(
  id="gain", statement="s", metric="gain", direction="higher", held=1.0
)
_SWEEP_INIT = lambda hp, key, data: {"w": hp["lr"] * 0.0}
_SWEEP_STEP = lambda s, hp, key, i, data: (s, {"w": s["w"]})


def _keys(n):
  return jax.random.split(jax.random.key(0), n)


def _sweep_keys_mismatch():
  core.run_sweep(
    _SWEEP_INIT, _SWEEP_STEP, {"lr": jnp.ones(3)}, _keys(2), num_steps=2
  )


def _sweep_raw_keys():
  core.run_sweep(
    _SWEEP_INIT,
    _SWEEP_STEP,
    {"lr": jnp.ones(3)},
    jax.random.split(jax.random.PRNGKey(0), 3),
    num_steps=2,
  )


def _sweep_object_steps():
  core.Sweep(_SWEEP_INIT, _SWEEP_STEP).run(
    {"lr": jnp.ones(3)}, _keys(3), num_steps=0
  )


def _cellstore_value():
  core.CellStore(_tmp()).put("cell", object())


def _cellstore_name():
  core.CellStore(_tmp()).put("", 1.0)


def _data_root() -> pathlib.Path:
  """A data root holding a symlink to a folder outside it."""
  d = _tmp()
  (d / "root").mkdir()
  (d / "outside").mkdir()
  (d / "root" / "link_out").symlink_to(d / "outside")
  return d / "root"


_DATA_ROOT = _data_root()

CASES = [
  Case(
    "core.resolve_data_dir",
    core.resolve_data_dir,
    ("/nonexistent/dir",),
    kwargs=dict(subdir="hypergraph"),
    error=FileNotFoundError,
    match="data_dir argument '/nonexistent/dir' was given",
    jit=None,
    jit_reason=HOST,
    id="data-dir-missing",
  ),
  Case(
    "core.resolve_data_dir",
    core.resolve_data_dir,
    ("/nonexistent/dir",),
    kwargs=dict(subdir="hypergraph", required=False),
    error=FileNotFoundError,
    match="never replaced",
    jit=None,
    jit_reason=HOST,
    id="data-dir-missing-not-required",
  ),
  Case(
    "core.resolve_data_dir",
    core.resolve_data_dir,
    (3,),
    error=TypeError,
    match="data_dir must be a path",
    jit=None,
    jit_reason=HOST,
    id="data-dir-int",
  ),
  Case(
    "core.locate_data_dir",
    core.locate_data_dir,
    ("/nonexistent/dir",),
    kwargs=dict(subdir="hypergraph", required=False),
    error=FileNotFoundError,
    match=(
      "data_dir argument '/nonexistent/dir' was given but .* does not exist"
    ),
    jit=None,
    jit_reason=HOST,
    id="locate-data-dir-missing",
  ),
  Case(
    "core.locate_data_dir",
    core.locate_data_dir,
    (_DATA_ROOT,),
    kwargs=dict(subdir="../elsewhere"),
    match=r"subdir '../elsewhere' must be a relative path inside",
    jit=None,
    jit_reason=HOST,
    id="locate-data-dir-subdir-escape",
  ),
  Case(
    "core.resolve_inside",
    core.resolve_inside,
    (_DATA_ROOT, "mail/../../etc"),
    kwargs=dict(name="dataset name"),
    match=(
      r"dataset name 'mail/../../etc' must be a relative path inside .* "
      r"without '..'"
    ),
    jit=None,
    jit_reason=HOST,
    id="resolve-inside-dotdot",
  ),
  Case(
    "core.resolve_inside",
    core.resolve_inside,
    (_DATA_ROOT, "/etc/passwd"),
    kwargs=dict(name="file"),
    match=r"file '/etc/passwd' must be a relative path inside",
    jit=None,
    jit_reason=HOST,
    id="resolve-inside-absolute",
  ),
  Case(
    "core.resolve_inside",
    core.resolve_inside,
    (_DATA_ROOT, "link_out/x.npz"),
    kwargs=dict(name="file"),
    match=r"file 'link_out/x.npz' leads outside .*\(through a symlink\)",
    jit=None,
    jit_reason=HOST,
    id="resolve-inside-symlink",
  ),
  Case(
    "core.resolve_inside",
    core.resolve_inside,
    (_DATA_ROOT, 3),
    kwargs=dict(name="file"),
    error=TypeError,
    match=r"file must be a path \(str or os.PathLike\), got int 3",
    jit=None,
    jit_reason=HOST,
    id="resolve-inside-int",
  ),
  Case(
    "core.config_view",
    core.config_view,
    ({"steps": 3, "lr": 0.1}, {"steps": 1, "lr": 0.1, "seed": 0}),
    error=ValueError,
    match=r"config field\(s\) \['seed'\] missing",
    jit=None,
    jit_reason=HOST,
    id="config-view-missing",
  ),
  Case(
    "core.config_view",
    core.config_view,
    ({"steps": "ten"}, {"steps": 1}),
    error=TypeError,
    match=r"config field steps must be of kind int",
    jit=None,
    jit_reason=HOST,
    id="config-view-steps-str",
  ),
  Case(
    "core.config_to_dataclass",
    core.config_to_dataclass,
    ({"steps": "ten"}, _Cfg),
    error=TypeError,
    match=r"_Cfg.steps must be of type int, got str 'ten'",
    jit=None,
    jit_reason=HOST,
    id="config-steps-str",
  ),
  Case(
    "core.config_to_dataclass",
    core.config_to_dataclass,
    ({"steps": 3, "lr": "fast"}, _Cfg),
    error=TypeError,
    match=r"_Cfg.lr must be of type float",
    jit=None,
    jit_reason=HOST,
    id="config-lr-str",
  ),
  Case(
    "core.config_to_dataclass",
    core.config_to_dataclass,
    ({"steps": True}, _Cfg),
    error=TypeError,
    match=r"_Cfg.steps must be of type int, got bool",
    jit=None,
    jit_reason=HOST,
    id="config-steps-bool",
  ),
  Case(
    "core.config_to_dataclass",
    core.config_to_dataclass,
    ({"steps": 3, "stpes": 4}, _Cfg),
    match=r"Unknown config field\(s\) \['stpes'\]",
    jit=None,
    jit_reason=HOST,
    id="config-unknown",
  ),
  Case(
    "core.config_to_dataclass",
    core.config_to_dataclass,
    ({"lr": 0.1}, _Cfg),
    match=r"Missing required config field\(s\) \['steps'\]",
    jit=None,
    jit_reason=HOST,
    id="config-missing",
  ),
  Case(
    "core.validate_choice",
    core.validate_choice,
    ("adamw",),
    kwargs=dict(name="optimizer", allowed=("sgd", "adam")),
    match=r"optimizer must be one of \['sgd', 'adam'\], got 'adamw'",
    jit=None,
    jit_reason=HOST,
    id="choice",
  ),
  Case(
    "core.validate_choice",
    core.validate_choice,
    (True,),
    kwargs=dict(name="mode", allowed=(0, 1)),
    match="mode must be one of",
    jit=None,
    jit_reason=HOST,
    id="choice-bool-is-not-1",
  ),
  Case(
    "core.validate_learning_rates",
    core.validate_learning_rates,
    ({"opt": {"adamw_lrs": (1e-3, -1e-2)}},),
    match=(
      r"config.opt.adamw_lrs must be a learning rate \(a finite number > 0\)"
    ),
    jit=None,
    jit_reason=HOST,
    id="learning-rates-negative",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    (0,),
    kwargs=dict(name="seeds"),
    error=ValueError,
    match=r"seeds must be a number of seeds >= 1 \(or a list of seeds\), got 0",
    jit=None,
    jit_reason=HOST,
    id="seeds-zero",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    (1,),
    kwargs=dict(name="seeds", min_count=2),
    error=ValueError,
    match=r"seeds must be a number of seeds >= 2",
    jit=None,
    jit_reason=HOST,
    id="seeds-below-min",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    ((),),
    kwargs=dict(name="seeds"),
    error=ValueError,
    match=r"seeds must name at least 1 seed\(s\), got \(\)",
    jit=None,
    jit_reason=HOST,
    id="seeds-empty",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    ((0, 0),),
    kwargs=dict(name="seeds"),
    error=ValueError,
    match=r"seeds must not repeat a seed",
    jit=None,
    jit_reason=HOST,
    id="seeds-repeated",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    ((0, -1),),
    kwargs=dict(name="seeds"),
    error=TypeError,
    match=r"seeds must hold int seeds >= 0",
    jit=None,
    jit_reason=HOST,
    id="seeds-negative",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    (3.0,),
    kwargs=dict(name="seeds"),
    error=TypeError,
    match=r"seeds must be a number of seeds or a tuple of int seeds, got float",
    jit=None,
    jit_reason=HOST,
    id="seeds-float",
  ),
  Case(
    "core.validate_seeds",
    core.validate_seeds,
    (True,),
    kwargs=dict(name="seeds"),
    error=TypeError,
    match=r"seeds must be a number of seeds or a tuple",
    jit=None,
    jit_reason=HOST,
    id="seeds-bool",
  ),
  Case(
    "core.validate_positive",
    core.validate_positive,
    (float("nan"),),
    kwargs=dict(name="lr"),
    match="lr must be a finite number",
    jit=None,
    jit_reason=HOST,
    id="positive-nan",
  ),
  Case(
    "core.validate_positive",
    core.validate_positive,
    (float("inf"),),
    kwargs=dict(name="lr"),
    match="lr must be a finite number",
    jit=None,
    jit_reason=HOST,
    id="positive-inf",
  ),
  Case(
    "core.validate_positive",
    core.validate_positive,
    (0,),
    kwargs=dict(name="steps"),
    match="steps must be > 0",
    jit=None,
    jit_reason=HOST,
    id="positive-zero",
  ),
  Case(
    "core.Checkpointer",
    _restore_missing_step,
    error=FileNotFoundError,
    match=r"no checkpoint for step 7 in .*ck; saved steps: \[1\]",
    jit=None,
    jit_reason=HOST,
    id="ckpt-missing-step",
  ),
  Case(
    "core.Checkpointer",
    _restore_corrupt_step,
    match=r"could not restore checkpoint step 2 from .*ck/2",
    jit=None,
    jit_reason=HOST,
    id="ckpt-truncated",
  ),
  Case(
    "core.Checkpointer",
    _restore_garbage_dir,
    match=r"could not restore checkpoint step 4 from .*ck/4",
    jit=None,
    jit_reason=HOST,
    id="ckpt-garbage-dir",
  ),
  Case(
    "core.Checkpointer",
    _restore_empty_dir,
    error=FileNotFoundError,
    match="no checkpoint to restore in",
    jit=None,
    jit_reason=HOST,
    id="ckpt-empty",
  ),
  Case(
    "core.Checkpointer",
    lambda: core.Checkpointer(_tmp(), max_to_keep=0),
    match="max_to_keep must be >= 1",
    jit=None,
    jit_reason=HOST,
    id="ckpt-max-to-keep",
  ),
  Case(
    "core.make_mesh",
    core.make_mesh,
    (0,),
    match=r"num_devices must be an int in \[1,",
    jit=None,
    jit_reason=HOST,
    id="mesh-zero",
  ),
  Case(
    "core.shard_batch",
    _shard_indivisible,
    match="must be divisible by the 8 devices",
    jit=None,
    jit_reason=HOST,
    id="shard-indivisible",
  ),
  Case(
    "core.read_results",
    lambda: core.read_results(_tmp() / "nope"),
    error=FileNotFoundError,
    match="results.json",
    jit=None,
    jit_reason=HOST,
    id="read-results-missing",
  ),
  Case(
    "core.save_figure",
    lambda: core.save_figure(None, _tmp(), "plots/loss.png"),
    match="name must be a bare file stem",
    jit=None,
    jit_reason=HOST,
    id="save-figure-name",
  ),
  Case(
    "core.train_loop",
    lambda: core.train_loop(None, None, None, num_steps=-1),
    match="num_steps must be >= 0",
    jit=None,
    jit_reason=HOST,
    id="train-loop-steps",
  ),
  Case(
    "core.check_array",
    core.check_array,
    (np.zeros(3, np.float32), "x"),
    kwargs=dict(ndim=2),
    match=r"x must have rank 2, got shape \(3,\)",
    id="check-array-rank",
  ),
  Case(
    "core.check_array",
    core.check_array,
    (np.zeros(3, np.float32), "ids"),
    kwargs=dict(dtype="int"),
    error=TypeError,
    match="ids must have a integer dtype",
    id="check-array-dtype",
  ),
  Case(
    "core.check_int",
    core.check_int,
    (2.5, "k"),
    error=TypeError,
    match="k must be an int, got float",
    jit=None,
    jit_reason="checks static arguments",
    id="check-int",
  ),
  Case(
    "core.check_float",
    core.check_float,
    (float("nan"), "temperature"),
    match="temperature must be a finite number",
    jit=None,
    jit_reason="checks static arguments",
    id="check-float-nan",
  ),
  Case(
    "core.check_values",
    core.check_values,
    (np.array([True, False]), "labels must be >= 0"),
    match="labels must be >= 0",
    jit="nan",
    jit_check=lambda ok: np.testing.assert_equal(np.asarray(ok), False),
    id="check-values",
  ),
  Case(
    "core.poison",
    core.poison,
    (np.ones(2, np.float32), np.float32(1.0)),
    error=TypeError,
    match="ok must be a boolean scalar",
    id="poison-ok-float",
  ),
  Case(
    "core.check_path",
    core.check_path,
    (3, "path"),
    error=TypeError,
    match="path must be a path",
    jit=None,
    jit_reason=HOST,
    id="check-path",
  ),
  Case(
    "core.read_metrics",
    _corrupt_metrics,
    match=r"metrics.jsonl: line 2 is not a JSON",
    jit=None,
    jit_reason=HOST,
    id="read-metrics-corrupt",
  ),
  Case(
    "core.MetricWriter",
    _metric_writer_step,
    (1.5,),
    error=TypeError,
    match="step must be an integer scalar",
    jit=None,
    jit_reason=HOST,
    id="mw-step-float",
  ),
  Case(
    "core.MetricWriter",
    _metric_writer_metrics,
    error=TypeError,
    match="metrics must be a mapping",
    jit=None,
    jit_reason=HOST,
    id="mw-metrics-list",
  ),
  Case(
    "core.MetricWriter",
    lambda: core.MetricWriter(_tmp(), filename="a/b.jsonl"),
    match="filename must be a bare file name",
    jit=None,
    jit_reason=HOST,
    id="mw-filename",
  ),
  Case(
    "core.Claim",
    lambda: core.Claim(**{**_CLAIM, "direction": "up"}),
    match=r"direction must be one of \['higher', 'lower'\], got 'up'",
    jit=None,
    jit_reason=HOST,
    id="claim-direction",
  ),
  Case(
    "core.parse_claims",
    core.parse_claims,
    ([{**_CLAIM, "bogus": 1}],),
    match=r"Unknown claim field\(s\) \['bogus'\]",
    jit=None,
    jit_reason=HOST,
    id="parse-claims-unknown",
  ),
  Case(
    "core.judge_all",
    core.judge_all,
    ("gain", {}),
    error=TypeError,
    match="a claim must be a mapping",
    jit=None,
    jit_reason=HOST,
    id="judge-all-str",
  ),
  Case(
    "core.judge",
    core.judge,
    ({**_CLAIM, "held": "high"}, {"gain": 2.0}),
    error=(TypeError, ValueError),
    match="held",
    jit=None,
    jit_reason=HOST,
    id="judge-held-str",
  ),
  Case(
    "core.Verdict",
    lambda: core.Verdict("gain", "great", 1.0, 0.0, "r"),
    match=r"Verdict.verdict must be one of",
    jit=None,
    jit_reason=HOST,
    id="verdict",
  ),
  Case(
    "core.MeanStd",
    lambda: core.MeanStd([1.0, 2.0]),
    error=TypeError,
    match="MeanStd.mean must be a real scalar",
    jit=None,
    jit_reason=HOST,
    id="meanstd-list",
  ),
  Case(
    "core.MeanStd",
    lambda: core.MeanStd(1.0, -0.5),
    match="MeanStd.std must be >= 0",
    jit=None,
    jit_reason=HOST,
    id="meanstd-negative-std",
  ),
  Case(
    "core.markdown_table",
    core.markdown_table,
    (["a", "b"], [[1]]),
    match=r"rows\[0\] has 1 cells, expected 2",
    jit=None,
    jit_reason=HOST,
    id="markdown-ragged",
  ),
  Case(
    "core.claims_table",
    core.claims_table,
    ([{"measured": 1.0}],),
    match=r"records\[0\] must be a judged claim",
    jit=None,
    jit_reason=HOST,
    id="claims-table-record",
  ),
  Case(
    "core.fit_power_law",
    core.fit_power_law,
    ([1, 2, 4], [1.0, -2.0, 4.0]),
    match=r"y must be > 0 for a log-log fit",
    jit=None,
    jit_reason=HOST,
    id="power-law-negative",
  ),
  Case(
    "core.fit_power_law",
    core.fit_power_law,
    ([1, 2, 3], [1, 2]),
    match="x and y must have the same length",
    jit=None,
    jit_reason=HOST,
    id="power-law-length",
  ),
  Case(
    "core.power_law_fit",
    core.power_law_fit,
    ([1, 2, 3], [1.0, 2.0]),
    match="x and y must have the same length",
    jit=None,
    jit_reason=HOST,
    id="power-law-fit-length",
  ),
  Case(
    "core.seed_summary",
    core.seed_summary,
    (0.5,),
    match=r"values must be \[n, \.\.\.\]",
    jit=None,
    jit_reason=HOST,
    id="seed-summary-scalar",
  ),
  Case(
    "core.seed_summary",
    core.seed_summary,
    (["a", "b"],),
    error=TypeError,
    match="values must be real numbers",
    jit=None,
    jit_reason=HOST,
    id="seed-summary-strings",
  ),
  Case(
    "core.fill_cells",
    core.fill_cells,
    ({}, {"a": ()}, print),
    error=TypeError,
    match="store must be a CellStore",
    jit=None,
    jit_reason=HOST,
    id="fill-cells-store",
  ),
  Case(
    "core.ci95_halfwidth",
    core.ci95_halfwidth,
    (np.zeros((3, 2)),),
    match=r"x must be 1-D \(one value per seed or split\), got shape \(3, 2\)",
    jit=None,
    jit_reason=HOST,
    id="ci95-2d",
  ),
  Case(
    "core.t_interval",
    core.t_interval,
    (np.array([1.0, np.nan, 2.0]),),
    match=r"x must be finite, got x\[1\] = nan",
    jit=None,
    jit_reason=STATS,
    id="t-interval-nan",
  ),
  Case(
    "core.paired_difference",
    core.paired_difference,
    (np.zeros(3), np.zeros(4)),
    match=r"a and b must be paired .* got 3 and 4 values",
    jit=None,
    jit_reason=STATS,
    id="paired-difference-lengths",
  ),
  Case(
    "core.log_ratio_interval",
    core.log_ratio_interval,
    (np.ones(3), np.array([1.0, 0.0, 2.0])),
    match=r"b must be > 0 for a log-ratio, got b\[1\] = 0.0",
    jit=None,
    jit_reason=STATS,
    id="log-ratio-nonpositive",
  ),
  Case(
    "core.paired_bootstrap",
    core.paired_bootstrap,
    (np.zeros((3, 2)), np.zeros((3, 2))),
    match=(
      r"a must be 1-D \(\[n\], one value per seed or item\), got shape \(3, "
      r"2\)"
    ),
    jit=None,
    jit_reason=STATS,
    id="paired-bootstrap-2d",
  ),
  Case(
    "core.cluster_bootstrap",
    core.cluster_bootstrap,
    (np.zeros(4),),
    match=(
      r"diffs must be a 2-D \[clusters, items\] array with at least one of "
      r"each, got shape \(4,\)"
    ),
    jit=None,
    jit_reason=STATS,
    id="cluster-bootstrap-1d",
  ),
  Case(
    "core.sign_flip_test",
    core.sign_flip_test,
    (np.ones(3),),
    {"alternative": "bigger"},
    match=r"alternative must be one of \('two-sided', 'greater', 'less'\)",
    jit=None,
    jit_reason=STATS,
    id="sign-flip-alternative",
  ),
  Case(
    "core.seeds_needed",
    core.seeds_needed,
    (0.5, -1.0),
    match=r"sd must be a finite number > 0, got -1.0",
    jit=None,
    jit_reason=STATS,
    id="seeds-needed-sd",
  ),
  Case(
    "core.half_width_at",
    core.half_width_at,
    (10, 1.0, 1.5),
    match=r"confidence must be a number in \(0, 1\), e.g. 0.95; got 1.5",
    jit=None,
    jit_reason=STATS,
    id="half-width-confidence",
  ),
  Case(
    "core.scaling_plot",
    core.scaling_plot,
    ({"ssm": ([1, 2, 4], [1.0, 2.0])},),
    match=r"series\['ssm'\]: x and y must have the same length",
    jit=None,
    jit_reason=HOST,
    id="scaling-plot-length",
  ),
  Case(
    "core.curves_plot",
    core.curves_plot,
    ({"a": (np.arange(4), np.ones((2, 3)))},),
    match=r"curves\['a'\]: y must be \[seeds, 4\]",
    jit=None,
    jit_reason=HOST,
    id="curves-plot-shape",
  ),
  Case(
    "core.grouped_bars",
    core.grouped_bars,
    (["g1", "g2"], {"a": ([1.0, 2.0], [0.1])}),
    match=r"series\['a'\]: errors must have one value per group",
    jit=None,
    jit_reason=HOST,
    id="grouped-bars-errors",
  ),
  Case(
    "core.command_line",
    core.command_line,
    (5,),
    error=TypeError,
    match="argv must be a sequence of str",
    jit=None,
    jit_reason=HOST,
    id="command-line",
  ),
  Case(
    "core.git_info",
    core.git_info,
    (5,),
    error=TypeError,
    match="",
    jit=None,
    jit_reason=HOST,
    id="git-info-int",
  ),
  Case(
    "core.run_sweep",
    _sweep_keys_mismatch,
    match=(
      r"hparams leaf \['lr'\] has shape \(3,\); every leaf needs the leading "
      r"runs axis \[R=2"
    ),
    jit=None,
    jit_reason=HOST,
    id="sweep-runs-mismatch",
  ),
  Case(
    "core.run_sweep",
    _sweep_raw_keys,
    error=TypeError,
    match="keys must be a \\[R\\] array of typed PRNG keys",
    jit=None,
    jit_reason=HOST,
    id="sweep-raw-keys",
  ),
  Case(
    "core.Sweep",
    _sweep_object_steps,
    match="num_steps must be a positive int",
    jit=None,
    jit_reason=HOST,
    id="sweep-steps-zero",
  ),
  Case(
    "core.Sweep",
    lambda: core.Sweep(5, _SWEEP_STEP),
    error=TypeError,
    match="init_fn must be callable",
    jit=None,
    jit_reason=HOST,
    id="sweep-init-fn",
  ),
  Case(
    "core.runs_mesh",
    core.runs_mesh,
    (2.5,),
    match="num_runs must be a positive int",
    jit=None,
    jit_reason=HOST,
    id="runs-mesh-float",
  ),
  Case(
    "core.CellStore",
    _cellstore_value,
    error=TypeError,
    match="cell values must be JSON-serialisable",
    jit=None,
    jit_reason=HOST,
    id="cellstore-value",
  ),
  Case(
    "core.CellStore",
    _cellstore_name,
    error=TypeError,
    match="cell name must be a non-empty str",
    jit=None,
    jit_reason=HOST,
    id="cellstore-name",
  ),
  Case(
    "core.CellRunner",
    core.CellRunner,
    ({"not": "a store"},),
    error=TypeError,
    match="store must be a CellStore, got dict",
    jit=None,
    jit_reason=HOST,
    id="cellrunner-store",
  ),
  Case(
    "core.CellRunner",
    lambda: core.CellRunner(core.CellStore(_tmp()), budget_s=-1.0),
    match=r"budget_s must be a number >= 0 \(0: no budget\), got -1.0",
    jit=None,
    jit_reason=HOST,
    id="cellrunner-budget",
  ),
  Case(
    "core.cached_json",
    lambda: core.cached_json(_tmp() / "c.json", lambda: {"x": object()}),
    error=TypeError,
    match="values must be JSON-serialisable, got object",
    jit=None,
    jit_reason=HOST,
    id="cached-json-value",
  ),
  Case(
    "core.cached_arrays",
    lambda: core.cached_arrays(
      _tmp() / "c.npz", lambda: {"o": np.array([None, 1])}
    ),
    match="array 'o' has the object dtype",
    jit=None,
    jit_reason=HOST,
    id="cached-arrays-object",
  ),
  Case(
    "core.process_batch_indices",
    lambda: core.process_batch_indices(6, core.make_mesh(4)),
    match="global_batch_size must be a positive int divisible by the 4 devices",
    jit=None,
    jit_reason=HOST,
    id="batch-indices-indivisible",
  ),
  Case(
    "core.process_batch_slice",
    lambda: core.process_batch_slice(8, "data"),
    error=TypeError,
    match="mesh must be a jax.sharding.Mesh or NamedSharding",
    jit=None,
    jit_reason=HOST,
    id="batch-slice-mesh",
  ),
  Case(
    "core.host_local_batch_to_global",
    lambda: core.host_local_batch_to_global(
      {"x": np.zeros((6, 2))}, core.make_mesh(4), 8
    ),
    match=r"local_batch leaf \['x'\] has shape \(6, 2\).*this process's 8 rows",
    jit=None,
    jit_reason=HOST,
    id="local-batch-rows",
  ),
  Case(
    "core.load_global_batch",
    lambda: core.load_global_batch(
      lambda r: np.zeros((len(r) + 1, 2)), 8, core.make_mesh(4)
    ),
    match="must hold this process's 8 rows",
    jit=None,
    jit_reason=HOST,
    id="load-batch-rows",
  ),
]

EXEMPT = {
  "abstract_like": (
    "accepts any pytree: array leaves become ShapeDtypeStructs, others pass"
  ),
  "data_sharding": (
    "takes a Mesh from make_mesh (validated there); no user data"
  ),
  "replicated_sharding": (
    "takes a Mesh from make_mesh (validated there); no user data"
  ),
  "replicate": (
    "jax.device_put of any pytree over a Mesh from make_mesh; no value to check"
  ),
  "progress": (
    "a tqdm progress bar; its arguments are tqdm's and tqdm checks them"
  ),
  "environment_info": "takes no arguments",
  "maybe_initialize_distributed": "takes no arguments (reads the environment)",
  "write_results": (
    "serialises any metrics/config (unknown objects are written as repr)"
  ),
  "TrainState": (
    "a container built by TrainState.create from an NNX model and optax tx"
  ),
  "is_concrete": "a predicate defined for every pytree",
  "is_main_process": "takes no arguments",
  "SweepResult": "a container returned by Sweep.run, not built by users",
  "CorruptCheckpointError": (
    "an exception Checkpointer raises, not called with user data"
  ),
  "CorruptFileError": (
    "an exception the file cache raises, not called with user data"
  ),
  "reuse_host_memory": (
    "takes no arguments; reports (not raises) when it cannot apply"
  ),
  "HostMemory": (
    "the status NamedTuple returned by reuse_host_memory, not built by users"
  ),
  "TInterval": (
    "the frozen result of t_interval / paired_difference, not built by users"
  ),
  "LogRatioInterval": (
    "the frozen result of log_ratio_interval, not built by users"
  ),
  "BootstrapInterval": (
    "the frozen result of paired_bootstrap, not built by users"
  ),
  "SignFlipResult": "the frozen result of sign_flip_test, not built by users",
  "SeedsNeeded": "the frozen result of seeds_needed, not built by users",
  "PowerLawFit": "the NamedTuple returned by power_law_fit, not built by users",
  "DataLocation": (
    "the (path, source) NamedTuple returned by locate_data_dir, "
    "not built by users"
  ),
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(core, CASES, EXEMPT)


def test_config_types_accepted():
  """Legal values of every annotated kind pass (numpy ints for int, ints for
  float, None)."""
  cfg = core.config_to_dataclass(
    {"steps": np.int64(3), "lr": 1, "dims": [4], "seed": None}, _Cfg
  )
  assert cfg.steps == 3 and cfg.lr == 1 and cfg.seed is None
  assert core.validate_positive(0.0, name="x", allow_zero=True) == 0.0


def test_explicit_data_dir_is_used(tmp_path):
  (tmp_path / "hg").mkdir()
  assert (
    core.resolve_data_dir(tmp_path, subdir="hg") == (tmp_path / "hg").resolve()
  )


def test_poison_and_check_values_under_jit():
  """The policy's two halves: eager raise, and NaN / -1 outputs from a traced
  failure."""

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
