"""The budget diagnosis of one episode: every reader in every context at every
budget.

:func:`diagnose_budget` runs the paper's diagnostic end to end on the dev and
the test queries of one episode (the same pool): one dense top-``k_max``
retrieval per split, Recall@k, purity and the coverage margin with its boundary
k*, the prior-only and constant-mean baselines, and per reader its accuracy and
MSE curves in the retrieved, oracle, shuffled and random contexts, its accuracy
peak, its regime and the threshold controller (calibrated on the dev split).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.evidence_coverage._budget import (
  controller_summary,
  coverage_summary,
  k_peak,
)
from jaxpapers.evidence_coverage._controls import (
  classify_regime,
  control_contexts,
)
from jaxpapers.evidence_coverage._data import ICLData, check_data
from jaxpapers.evidence_coverage._readers import PriorReader
from jaxpapers.evidence_coverage._retrieval import check_ks, dense_topk
from jaxpapers.evidence_coverage._sweep import (
  Reader,
  _query_block,
  answer_metrics,
  k_sweep,
)


def _metrics(
  reader, data, ks, tol, mesh, chunk, idx, y_override=None, valid=None
) -> tuple[np.ndarray, np.ndarray]:
  """Correctness and squared errors [n_k, Q]; queries in blocks of ``chunk``
  when it divides Q (one compile), else all at once."""
  Q = idx.shape[0]
  c = chunk if chunk is not None and chunk < Q and Q % chunk == 0 else None
  kw = dict(y_override=y_override, valid=valid, mesh=mesh, query_chunk=c)
  correct, se = answer_metrics(
    jnp.asarray(k_sweep(reader, data, idx, ks, **kw)), data.q_y, tol=tol
  )
  return np.asarray(correct), np.asarray(se)


def _reader(
  reader, data, contexts, ks, tol, regime_tol, mesh, chunk, controller
) -> dict:
  res, correct = {}, {}
  for name, kw in contexts.items():
    correct[name], se = _metrics(reader, data, ks, tol, mesh, chunk, **kw)
    res[name] = {
      "acc": correct[name].mean(1).tolist(),
      "mse": se.mean(1).tolist(),
    }
  acc, oracle = np.asarray(res["retrieved"]["acc"]), res["oracle"]["acc"]
  res["k_peak"] = k_peak(acc, ks)
  res["regime"] = classify_regime(
    acc, oracle, ks, tol=regime_tol, ceiling=max(oracle)
  )
  sims_dev, correct_dev, sims = controller
  ctrl = controller_summary(
    sims_dev, correct_dev, sims, correct["retrieved"], ks
  )
  res["controller"] = {**ctrl, "best_fixed_k_acc": float(acc.max())}
  return res


def _baselines(data: ICLData, idx, ks, tol, mesh) -> dict:
  y = data.q_y
  prior = k_sweep(PriorReader(), data, idx, ks[:1], mesh=mesh)
  c, se = answer_metrics(prior, y, tol=tol)
  out = {"prior": {"acc": float(np.mean(c)), "mse": float(np.mean(se))}}
  const = jnp.full(
    (1, y.shape[0]), float(np.mean(np.asarray(data.pool_y))), jnp.float32
  )
  c, se = answer_metrics(const, y, tol=tol)
  out["constant_mean"] = {"acc": float(np.mean(c)), "mse": float(np.mean(se))}
  return out


def diagnose_budget(
  key: jax.Array,
  data: ICLData,
  readers: Mapping[str, Reader],
  ks: Sequence[int],
  *,
  n_dev: int,
  tol: float,
  regime_tol: float,
  mesh: jax.sharding.Mesh | None = None,
  query_chunk: int | None = None,
) -> dict[str, Any]:
  """The retrieval-budget diagnosis of one episode, in the shapes a results file
  records.

  Regression answers are correct when ``|yhat - y| < tol``
  (:func:`answer_metrics`).

  Args:
    key: typed PRNG key of the shuffled and random controls
      (:func:`control_contexts`).
    data: the episode; its first ``n_dev`` queries (dev) calibrate the threshold
      controller, the others (test) give every curve.
    readers: name -> reader (e.g. ``{"ridge": RidgeReader(1.0)}``).
    ks: strictly increasing budgets; ``ks[-1]`` is the retrieved list length.
    n_dev: the number of dev queries (at least 1, fewer than the episode's
      queries).
    tol: the answer tolerance (> 0).
    regime_tol: the tolerance of :func:`classify_regime`.
    mesh: optional mesh to shard the queries over (:func:`k_sweep`).
    query_chunk: optional query block size of :func:`k_sweep`, used where it is
      smaller than and divides a split's query count.

  Returns:
    :func:`coverage_summary` of the test queries (``recall``, ``purity``,
    ``c_eff``, ``ambiguity``, ``delta`` [len(ks)] lists, ``k_star``,
    ``k_star_average``); ``prior`` and ``constant_mean`` (the pool's mean label)
    as ``{"acc", "mse"}``; and per reader name ``{context: {"acc", "mse"}
    [len(ks)] lists for the five contexts of :func:`control_contexts}, "k_peak":
    k_peak(acc), "regime": classify_regime(...), "controller": {"tau", "acc",
    "k_geomean", "best_fixed_k_acc"}}``.
  """
  data = check_data(data)
  Q = data.q_x.shape[0]
  n_dev = V.check_int(n_dev, "n_dev", min_value=1, max_value=Q - 1)
  dev, test = _query_block(data, 0, n_dev), _query_block(data, n_dev, Q)
  ks = check_ks(ks)
  if not readers or not all(isinstance(n, str) for n in readers):
    raise ValueError("readers must map at least one name (a str) to a reader")
  V.check_float(tol, "tol", min_value=0.0, min_inclusive=False)
  k_max = ks[-1]
  dev_idx, dev_sims = dense_topk(dev.q_x, dev.pool_x, k_max)
  idx, sims = dense_topk(test.q_x, test.pool_x, k_max)
  contexts = control_contexts(key, test, idx, k_max)
  out = {
    **coverage_summary(idx, test, ks),
    **_baselines(test, idx, ks, tol, mesh),
  }
  if clash := sorted(set(readers) & set(out)):
    raise ValueError(
      f"readers must not be named like a result field, got {clash}"
    )
  for name, reader in readers.items():
    dev_correct = _metrics(reader, dev, ks, tol, mesh, query_chunk, dev_idx)[0]
    controller = (np.asarray(dev_sims), dev_correct, sims)
    out[name] = _reader(
      reader, test, contexts, ks, tol, regime_tol, mesh, query_chunk, controller
    )
  return out
