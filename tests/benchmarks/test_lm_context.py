"""The prefill FLOP count of benchmarks/lm_context.py against the model's own
program."""

import math
import time

import jax
import jax.extend as jex
import numpy as np
import pytest

from benchmarks import lm_context
from jaxpapers import lm
from tests.lm.test_model import GEMMA_LIKE, TINY, _params


def _dot_flops(jaxpr) -> int:
  """2 · (output size) · (contracted size) summed over every dot_general of a
  jaxpr, inner jaxprs included (a scan's body counted `length` times)."""
  total = 0
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "dot_general":
      (lhs_contract, _), _ = eqn.params["dimension_numbers"]
      lhs = eqn.invars[0].aval.shape
      contracted = math.prod(lhs[i] for i in lhs_contract)
      total += 2 * math.prod(eqn.outvars[0].aval.shape) * contracted
      continue
    if eqn.primitive.name in ("while", "cond"):
      inner = [j for j in jex.core.jaxprs_in_params(eqn.params)]
      assert not any(_dot_flops(j) for j in inner), (
        f"a matmul inside {eqn.primitive.name}"
      )
      continue
    times = eqn.params["length"] if eqn.primitive.name == "scan" else 1
    for j in jex.core.jaxprs_in_params(eqn.params):
      total += times * _dot_flops(j)
  return total


@pytest.mark.parametrize(
  "config", [TINY, GEMMA_LIKE], ids=["smollm2-like", "gemma-like"]
)
def test_prefill_flops_equal_the_matmuls_of_the_dense_forward(config):
  """The dense path multiplies every (query, key) pair, so its matrix products
  equal the formula with T² pairs per layer; a wrong projection width, head
  count or layer count, a missing or doubled logits term would change the
  count."""
  T = 13
  params = _params(config)
  tokens = np.zeros((1, T), np.int32)
  jaxpr = jax.make_jaxpr(
    lambda p, t: lm.forward(
      p, t, config=config, logits_at="last", attention=("dense")
    )[0]
  )(params, tokens)
  want = lm_context.prefill_flops(config, T, pairs=lambda t, w: t * t)
  assert _dot_flops(jaxpr.jaxpr) == want["total"]
  assert want["logits"] == 2 * config.d_model * config.vocab_size


@pytest.mark.parametrize("window", [None, 1, 3, 7, 13, 40])
def test_allowed_pairs_enumerate_the_causal_window_mask(window):
  T = 13
  t, j = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
  allowed = (j <= t) & ((t - j < window) if window else True)
  assert lm_context.allowed_pairs(T, window) == int(allowed.sum())


def test_prefill_flops_count_local_layers_over_their_window():
  """Gemma-like: two local layers (window 3) and one global layer."""
  T = 10
  f = lm_context.prefill_flops(GEMMA_LIKE, T)
  H, dh = GEMMA_LIKE.n_heads, GEMMA_LIKE.head_dim
  # rows 0..2 see 1, 2, 3 keys; rows 3..9 see 3
  local = (1 + 2 + 3) + (T - 3) * 3
  assert local == 27
  assert f["attention"] == 4 * H * dh * (2 * local + T * (T + 1) // 2)


@pytest.mark.parametrize(
  "config", [TINY, GEMMA_LIKE], ids=["smollm2-like", "gemma-like"]
)
def test_layer_matmul_shapes_carry_the_projection_flops(config):
  """The diagnostics' seven dots per layer are the projections the FLOP count
  charges."""
  T = 11
  shapes = lm_context.layer_matmul_shapes(config, T)
  assert len(shapes) == 7 and all(m == T for m, _, _ in shapes)
  per_layer = sum(2 * m * k * n for m, k, n in shapes)
  assert (
    per_layer * config.n_layers
    == lm_context.prefill_flops(config, T)["projections"]
  )


def _row(**kw):
  row = {
    "model": "m",
    "tokens": 256,
    "head_dim": 64,
    "d_model": 8,
    "vocab": 100,
    "flops": {"attention": 1, "total": 10},
    "fraction": 1.2,
    "cpu_fraction": 0.9,
    "matmul_ceiling_fraction": 1.0,
    "matmul_ceiling_cpu_fraction": 0.95,
    "prefill_over_cap_time": 0.83,
    "matmul_gflops": 19.0,
    "rounds": 3,
    "load_average_before": [1.0, 0.0, 0.0],
    "load_average_after": [1.0, 0.0, 0.0],
    "matmul_cores_busy": 0.5,  # the reference dot's threads waited for the CPUs
    "usable_cpus": 2,
  }
  for tag in ("", "cpu_"):
    for part in ("projections", "attention_global", "logits"):
      row[f"{part}_{tag}fraction"] = 0.5
  row.update(kw)
  return row


def test_overloaded_rows_are_not_judged():
  row = _row()
  entries = lm_context.summarize([row], {"m": "M"})
  assert len(entries) == 2  # the fraction and the cap its matrix products set
  assert all(
    e["met"] is False and e["note"].startswith("not judged") for e in entries
  )
  # CPU time
  assert all("the prefill 90%, the cap 95%" in e["note"] for e in entries)
  # wall time is noise there
  assert [e["value"] for e in entries] == [90.0, 95.0]
  assert all(
    e["name"].endswith("per CPU second (host loaded: not judged)")
    for e in entries
  )
  row["matmul_cores_busy"] = 1.79  # just under 0.9 x 2 CPUs
  assert all(
    e["met"] is False for e in lm_context.summarize([row], {"m": "M"})[:2]
  )
  row["matmul_cores_busy"] = 1.81
  fraction, cap = lm_context.summarize([row], {"m": "M"})
  assert fraction["met"] is True and fraction["value"] == 120.0
  assert (
    cap["met"] is True
    and cap["value"] == 100.0
    and "reaches 120% of this cap" in cap["note"]
  )
  row["matmul_ceiling_fraction"] = 0.7
  _, cap = lm_context.summarize([row], {"m": "M"})
  assert cap["met"] is False and cap["value"] == 70.0


def test_interleaved_min_takes_each_callables_fastest_block():
  """Blocks alternate between the callables, and each one's time is its fastest
  block."""
  calls = []
  slow = iter([True, False, True, False, True, False])

  def a():
    calls.append("a")
    if next(slow, False):
      time.sleep(0.02)
    return jax.numpy.zeros(())

  def b():
    calls.append("b")
    return jax.numpy.zeros(())

  out = lm_context.interleaved_min({"a": a, "b": b}, repeats=3, block_s=0.0)
  assert out["a"]["calls_per_block"] == out["b"]["calls_per_block"] == 1
  # warm-ups, then rounds in rotated order: (a, b), (b, a), (a, b)
  assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
  assert len(out["a"]["blocks"]) == 3
  assert out["a"]["wall_s"] == min(w for w, _ in out["a"]["blocks"]) < 0.02


def test_cores_busy_reads_the_fastest_wall_block():
  m = {"blocks": [[2.0, 3.9], [1.0, 1.9], [1.5, 2.0]]}
  assert lm_context._cores_busy(m) == pytest.approx(1.9)


class _Clock:
  """A matmul clock of 100 FLOP/s."""

  flops = 100.0


# Measured times of a prefill of 200 FLOPs and of its parts, and the parts'
# (shapes, FLOPs, count), for the fraction arithmetic.
_MEAS = {
  "matmul": {"wall_s": 1.0, "cpu_s": 2.0},
  "prefill": {"wall_s": 4.0, "cpu_s": 6.0},
  "projections": {"wall_s": 1.0, "cpu_s": 1.5},
  "logits": {"wall_s": 0.5, "cpu_s": 0.5},
}
_PARTS = {"projections": (None, 50.0, 2), "logits": (None, 10.0, 1)}


def test_fractions_share_one_reference_rate():
  """The prefill over its cap is the cap's time over the prefill's: the dot
  cancels."""
  f = lm_context._fractions(_MEAS, _PARTS, 200.0, _Clock())
  assert f["fraction"] == pytest.approx(200 / 4 / 100)
  assert f["cpu_fraction"] == pytest.approx(200 / 6 / 50)
  assert f["matmul_ceiling_fraction"] == pytest.approx(200 / 2.5 / 100)
  assert f["matmul_ceiling_cpu_fraction"] == pytest.approx(200 / 3.5 / 50)
  assert f["projections_fraction"] == pytest.approx(50 / 1 / 100)
  assert f["prefill_over_cap_time"] == pytest.approx(4 / 2.5)


@pytest.mark.parametrize(
  "config", [TINY, GEMMA_LIKE], ids=["smollm2-like", "gemma-like"]
)
def test_weight_copies_copy_every_layer_of_the_stacked_weights(config):
  """The probe walks every layer (its carry ends as the last layer's slices) and
  counts the bytes of the seven stacked matrices the forward's layer scan
  reads."""
  params = _params(config)
  fn, nbytes = lm_context.weight_copies(params)
  last = fn()
  assert len(last) == len(lm_context.LAYER_WEIGHTS) == 7
  for name, got in zip(lm_context.LAYER_WEIGHTS, last):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(params[name][-1]))
  assert nbytes == sum(
    params[n].size * params[n].dtype.itemsize for n in lm_context.LAYER_WEIGHTS
  )
  shapes = lm.param_shapes(config)
  assert set(lm_context.LAYER_WEIGHTS) <= set(shapes)
  assert all(shapes[n][0] == config.n_layers for n in lm_context.LAYER_WEIGHTS)


def test_the_cap_with_weight_copies_adds_their_time():
  meas = dict(_MEAS, weight_copies={"wall_s": 0.5, "cpu_s": 1.0})
  f = lm_context._fractions(meas, _PARTS, 200.0, _Clock())
  # products only
  assert f["matmul_ceiling_fraction"] == pytest.approx(200 / 2.5 / 100)
  assert f["matmul_ceiling_with_copies_fraction"] == pytest.approx(
    200 / 3.0 / 100
  )
  assert f["matmul_ceiling_with_copies_cpu_fraction"] == pytest.approx(
    200 / 4.5 / 50
  )
  assert f["weight_copies_ms"] == pytest.approx(500.0)
  assert f["weight_copies_cpu_ms"] == pytest.approx(1000.0)


def test_the_cap_with_weight_copies_is_a_third_entry_judged_like_the_others():
  extra = dict(
    matmul_ceiling_with_copies_fraction=0.9,
    matmul_ceiling_with_copies_cpu_fraction=0.85,
    weight_copies_ms=20.0,
    weight_copies_cpu_ms=30.0,
    weight_copy_bytes=400_000_000,
    wall_s=0.2,
  )
  row = _row(matmul_cores_busy=1.95, **extra)
  fraction, cap, with_copies = lm_context.summarize([row], {"m": "M"})
  assert "weight copies" in with_copies["name"] and with_copies["value"] == 90.0
  assert with_copies["met"] is True  # >= 80
  assert (
    "400 MB per prefill" in with_copies["note"]
    and "(10% of the" in with_copies["note"]
  )
  # fraction 1.2 over 0.9
  assert "reaches 133% of this cap" in with_copies["note"]
  # the reference dot's threads waited: not judged, CPU-time values
  row = _row(**extra)
  entries = lm_context.summarize([row], {"m": "M"})
  assert [e["value"] for e in entries] == [90.0, 95.0, 85.0]
  assert all(
    e["met"] is False and e["note"].startswith("not judged") for e in entries
  )
