"""Evaluation and claim code of the msretrieval experiment.

:func:`evaluate_runs` scores every trained run and the trivial baselines on the
test pools; :func:`summarise` averages them over seeds; :func:`derived_metrics`
turns the summaries (and the toy regret of
``jaxpapers.msretrieval.toy_regret_summary``) into the numbers the claims of
``configs/default.py`` are judged on; :func:`report_view` shapes a record for
its report.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from flax import nnx

import jaxpapers.msretrieval as M
from jaxpapers import core

POOLS = M.POOL_MODES
KS = (1, 5, 20)
PLACEBO_POOLS = ("mass", "hard")


# Arrays go in as arguments, not closed-over constants (XLA would constant-fold
# them).
@jax.jit
def _pool_metrics(probs, fps, fp, pool, labels, key) -> dict[str, jax.Array]:
  """Fingerprint metrics and HR@k of ``probs`` ``[Q, F]`` on one pool, averaged
  over queries."""
  cand = fps[pool]
  mask = jnp.ones(labels.shape, bool)
  out = M.retrieval_metrics(probs, fp, cand, labels, mask, key=key, ks=KS)
  return {k: v.mean() for k, v in out.items()}


@jax.jit
def _placebo_hr1(probs, fps, pool, shuffled, key) -> jax.Array:
  """HR@1 (cosine) against each of ``S`` shuffled label sets ``[S, Q, C]`` ->
  ``[S]``."""
  mask = jnp.ones(pool.shape, bool)
  scores = M.candidate_scores(probs, fps[pool], mask, sim="cosine")
  keys = jax.random.split(key, shuffled.shape[0])
  return jax.vmap(
    lambda lab, k: M.hit_rate_at_k(scores, lab, mask, 1, key=k).mean()
  )(shuffled, keys)


@jax.jit
def _random_hr(pool_labels, key) -> dict[str, jax.Array]:
  """HR@k of a uniformly random ranking (ties optimistic: they cannot occur)."""
  s = jax.random.uniform(key, pool_labels.shape)
  mask = jnp.ones(pool_labels.shape, bool)
  return {
    f"hr/random@{k}": M.hit_rate_at_k(
      s, pool_labels, mask, k, ties="optimistic"
    ).mean()
    for k in KS
  }


def _pools_of(d: dict, probs, key) -> dict[str, dict[str, float]]:
  """:func:`_pool_metrics` of ``probs`` ``[Q, F]`` on every test pool."""
  # one layout for every caller: one compile
  probs = jnp.asarray(np.asarray(probs, np.float32))
  fps = jnp.asarray(d["fps"])
  fp = fps[jnp.asarray(d["test"])]
  out = {}
  for i, mode in enumerate(POOLS):
    pool, labels = (
      jnp.asarray(d[f"{mode}_pool"]),
      jnp.asarray(d[f"{mode}_labels"]),
    )
    out[mode] = _floats(
      _pool_metrics(probs, fps, fp, pool, labels, jax.random.fold_in(key, i))
    )
  return out


def _baselines(cfg, d: dict, key) -> dict:
  """The trivial predictors on the test pools: the input-independent
  bit-frequency prior, the nearest-neighbour spectrum lookup
  (``M.nearest_neighbour_fingerprints``, ``nn_k`` neighbours) and a random
  ranking."""
  train, test = d["train"], d["test"]
  prior = np.broadcast_to(
    d["fps"][train].mean(0).astype(np.float32), d["fps"][test].shape
  )
  x, fps = d["spectra"], d["fps"]
  nn = M.nearest_neighbour_fingerprints(x[test], x[train], fps[train], cfg.nn_k)
  base = {
    "prior": _pools_of(d, prior, jax.random.fold_in(key, 10_001)),
    "nn_lookup": _pools_of(d, nn, jax.random.fold_in(key, 10_002)),
  }
  base["random"] = {
    mode: _floats(
      _random_hr(
        jnp.asarray(d[f"{mode}_labels"]), jax.random.fold_in(key, 20_000 + i)
      )
    )
    for i, mode in enumerate(POOLS)
  }
  return base


def evaluate_runs(
  cfg: ml_collections.ConfigDict, d: dict, names, graphdef: nnx.GraphDef, params
) -> dict:
  """Per run, per pool: fingerprint metrics and HR@k (seed-averaged later), and
  the baselines.

  Args:
    cfg: the experiment's config.
    d: the prepared data (``jaxpapers.msretrieval.simulated_benchmark``).
    names: ``[R]`` ``(objective, seed)`` of the runs.
    graphdef: the encoder's graph definition.
    params: the runs' parameters, each leaf with a leading ``[R]`` axis.

  Returns:
    ``{"runs": [per run: {"loss", "seed", pool: {metric: value}, "placebo_hr1"?}],
    "baselines": {"prior" | "nn_lookup" | "random": {pool: {metric: value}}}}``.
  """
  fps = jnp.asarray(d["fps"])
  x = jnp.asarray(d["spectra"])[jnp.asarray(d["test"])]
  predict = jax.jit(lambda p, x: jax.nn.sigmoid(nnx.merge(graphdef, p)(x)))
  shuffle = lambda i, mode: M.shuffled_labels(
    d[f"{mode}_labels"], cfg.placebo_shuffles, [cfg.seed, 300 + i]
  )
  shuffled = (
    {
      mode: jnp.asarray(shuffle(i, mode))
      for i, mode in enumerate(PLACEBO_POOLS)
    }
    if cfg.placebo_shuffles
    else {}
  )
  key = jax.random.key(cfg.seed + 77)
  runs = []
  for r, (loss, s) in enumerate(names):
    probs = predict(jax.tree.map(lambda a, r=r: a[r], params), x)
    run = {
      "loss": loss,
      "seed": s,
      **_pools_of(d, probs, jax.random.fold_in(key, r)),
    }
    if shuffled:
      pk = jax.random.fold_in(key, 50_000 + r)
      run["placebo_hr1"] = {
        mode: np.asarray(
          _placebo_hr1(
            probs,
            fps,
            jnp.asarray(d[f"{mode}_pool"]),
            lab,
            jax.random.fold_in(pk, i),
          )
        ).tolist()
        for i, (mode, lab) in enumerate(shuffled.items())
      }
    runs.append(run)
  return {"runs": runs, "baselines": _baselines(cfg, d, key)}


def _floats(tree: dict) -> dict[str, float]:
  return {k: float(v) for k, v in tree.items()}


# [seeds, ...] -> mean, std
_seed_mean_std = functools.partial(core.seed_summary, ci_key=None)


def summarise(cfg: ml_collections.ConfigDict, ev: dict) -> dict:
  """Seed mean and std per (objective, pool, metric); ``placebo_hr1``: per
  shuffle."""
  out = {}
  for loss in cfg.losses:
    rs = [r for r in ev["runs"] if r["loss"] == loss]
    out[loss] = {
      m: {k: _seed_mean_std(np.array([r[m][k] for r in rs])) for k in rs[0][m]}
      for m in POOLS
    }
    if "placebo_hr1" in rs[0]:  # [seeds, S] per pool
      placebo = [r["placebo_hr1"] for r in rs]
      out[loss]["placebo_hr1"] = {
        m: _seed_mean_std(np.array([p[m] for p in placebo])) for m in placebo[0]
      }
  return out


def misalignment(tan: dict, hr: dict, n: int) -> dict:
  """Do the best objective by Tanimoto and the best by HR@1 differ, beyond the
  seed noise?

  Args:
    tan: ``{objective: {"mean", "std"}}`` mean thresholded Tanimoto over seeds.
    hr: ``{objective: {"mean", "std"}}`` HR@1 over seeds.
    n: seeds per objective.

  Returns:
    ``L_T`` (best seed-mean Tanimoto), ``L_H`` (best seed-mean HR@1), the gaps
    ``gap_H = HR@1(L_H) - HR@1(L_T)`` and ``gap_T = T(L_T) - T(L_H)``, and ``z =
    min(gap_H / se_H, gap_T / se_T)`` with ``se`` the standard error of each
    difference from the two seed stds; ``z = 0`` when ``L_T = L_H`` (the two
    metric families agree).
  """
  lt = max(tan, key=lambda k: tan[k]["mean"])
  lh = max(hr, key=lambda k: hr[k]["mean"])
  if lt == lh:
    return {"lt": lt, "lh": lh, "gap_h": 0.0, "gap_t": 0.0, "z": 0.0}
  gh = hr[lh]["mean"] - hr[lt]["mean"]
  gt = tan[lt]["mean"] - tan[lh]["mean"]
  se_h = np.sqrt((hr[lh]["std"] ** 2 + hr[lt]["std"] ** 2) / n)
  se_t = np.sqrt((tan[lt]["std"] ** 2 + tan[lh]["std"] ** 2) / n)
  zh = gh / se_h if se_h > 0 else np.inf
  zt = gt / se_t if se_t > 0 else np.inf
  return {
    "lt": lt,
    "lh": lh,
    "gap_h": float(gh),
    "gap_t": float(gt),
    "z": float(min(zh, zt)),
  }


def derived_metrics(metrics: dict) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure; JSON
  in/out).

  For pool P: ``misalignment_z_P`` from :func:`misalignment` on the seed-mean
  Tanimoto and HR@1 (cosine retrieval, the reference's score for every objective
  here). With placebo shuffles (``objectives[*]["placebo_hr1"]``),
  ``misalignment_z_P_shuffled`` is the median over the label shuffles of the
  same statistic with HR@1 measured against the shuffled labels (the
  shuffled-label control); ``..._shuffled_all`` lists every shuffle's value. The
  toy values come from the deduplicated problems; ``toy_raw_*`` from the
  problems as drawn.
  """
  out = {}
  summ = metrics["objectives"]
  n = metrics["seeds"]
  for pool in ("mass", "hard"):
    tan = {k: v[pool]["fp/tanimoto"] for k, v in summ.items()}
    hr = {k: v[pool]["hr/cosine@1"] for k, v in summ.items()}
    mis = misalignment(tan, hr, n)
    lh = mis["lh"]
    out[f"best_tanimoto_loss_{pool}"] = mis["lt"]
    out[f"best_hr1_loss_{pool}"] = lh
    out[f"hr1_gap_{pool}"] = mis["gap_h"]
    out[f"tanimoto_gap_{pool}"] = mis["gap_t"]
    out[f"misalignment_z_{pool}"] = mis["z"]
    order_t = sorted(tan, key=lambda k: -tan[k]["mean"])
    order_h = sorted(hr, key=lambda k: -hr[k]["mean"])
    out[f"kendall_tau_{pool}"] = _kendall(order_t, order_h)
    out[f"best_hr1_{pool}"] = hr[lh]["mean"]
    out[f"best_hr1_std_{pool}"] = hr[lh]["std"]
    placebo = [v.get("placebo_hr1", {}).get(pool) for v in summ.values()]
    if all(p is not None for p in placebo):
      zs = []
      for i in range(len(placebo[0]["mean"])):
        hr_i = {
          k: {
            "mean": v["placebo_hr1"][pool]["mean"][i],
            "std": v["placebo_hr1"][pool]["std"][i],
          }
          for k, v in summ.items()
        }
        zs.append(misalignment(tan, hr_i, n)["z"])
      out[f"misalignment_z_{pool}_shuffled"] = float(np.median(zs))
      out[f"misalignment_z_{pool}_shuffled_all"] = zs
  base = metrics["baselines"]
  for pool in ("mass", "hard"):
    trivial = max(
      base["random"][pool]["hr/random@1"], base["prior"][pool]["hr/cosine@1"]
    )
    out[f"best_trivial_hr1_{pool}"] = trivial
    out[f"method_minus_trivial_hr1_{pool}"] = out[f"best_hr1_{pool}"] - trivial
    out[f"nn_lookup_hr1_{pool}"] = base["nn_lookup"][pool]["hr/cosine@1"]
  for part, prefix in (("dedup", "toy_"), ("raw", "toy_raw_")):
    out.update({prefix + k: metrics["toy"][part][k] for k in TOY_DERIVED[part]})
  return out


# The toy summaries' values copied into ``derived`` (deduplicated problems; as
# drawn).
TOY_DERIVED = {
  "dedup": (
    "mean_regret_jaccard",
    "mean_regret_jaccard_ci95",
    "mean_regret_bce_cosine",
    "mean_regret_oracle",
    "mean_regret_oracle_ci95",
    "regret_high_minus_low",
    "regret_high_minus_low_ci95",
    "low_count",
    "high_count",
    "problems",
    "duplicates_left",
    "lemma_violations",
  ),
  "raw": ("mean_regret_jaccard", "duplicate_share", "regret_high_minus_low"),
}


def _kendall(a: list, b: list) -> float:
  """Kendall's tau of two orderings of the same keys: the mean over pairs of +1
  / -1."""
  pos = {k: i for i, k in enumerate(b)}
  signs = [
    1 if pos[x] < pos[y] else -1 for i, x in enumerate(a) for y in a[i + 1 :]
  ]
  return sum(signs) / len(signs) if signs else 0.0


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, in the shapes it reads them
  (pure).

  Returns:
    ``{"bins": [toy band rows], "ties": {problems: row}, "frontier": {pool:
    {"losses", "front", "baselines", "random"}}, "toy": {part: {"mid", "jac",
    "bce"}}}``.
  """
  m, losses = record["metrics"], record["config"]["losses"]
  obj, base = m["objectives"], m["baselines"]
  names = {"dedup": "deduplicated", "raw": "as drawn"}
  bins = [
    {"problems": names[part], "band": f"[{b['lo']:.2f}, {b['hi']:.2f})", **b}
    for part in ("dedup", "raw")
    for b in m["toy"][part]["bins"]
  ]
  raw, dd = m["toy"]["raw"], m["toy"]["dedup"]
  ties = {
    "as drawn": {**raw, "dups": raw["duplicate_share"]},
    "deduplicated": {**dd, "dups": 0.0 if dd["duplicates_left"] == 0 else None},
  }
  frontier = {}
  for pool in ("mass", "hard"):
    pts = {
      l: (obj[l][pool]["fp/tanimoto"], obj[l][pool]["hr/cosine@1"])
      for l in losses
    }
    xy = np.array([(t["mean"], h["mean"]) for t, h in pts.values()])
    front = sorted(xy[M.pareto_front(xy)].tolist())
    frontier[pool] = {
      "losses": {
        l: {
          "x": [t["mean"]],
          "y": [h["mean"]],
          "xerr": [t["std"]],
          "yerr": [h["std"]],
        }
        for l, (t, h) in pts.items()
      },
      "front": {"x": [p[0] for p in front], "y": [p[1] for p in front]},
      "baselines": {
        n: {
          "x": [base[n][pool]["fp/tanimoto"]],
          "y": [base[n][pool]["hr/cosine@1"]],
        }
        for n in ("prior", "nn_lookup")
      },
      "random": base["random"][pool]["hr/random@1"],
    }
  toy = {}
  for part in ("dedup", "raw"):
    bs = [b for b in m["toy"][part]["bins"] if b["count"]]
    toy[names[part]] = {
      "mid": [(b["lo"] + b["hi"]) / 2 for b in bs],
      "jac": [b["regret_jaccard"] for b in bs],
      "bce": [b["regret_bce_cosine"] for b in bs],
    }
  return {"bins": bins, "ties": ties, "frontier": frontier, "toy": toy}
