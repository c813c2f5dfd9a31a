"""An equal-budget random search over PANDA and vanilla backbones: seeded trial
draws and a cache of compiled trial programs.

Trial ``t`` is drawn from ``numpy.random.default_rng([seed, t])`` with exactly
one uniform number per parameter, in the fixed order :data:`SEARCH_SPACE_ORDER`,
whatever the backbone or arm: every (backbone, arm) sees the same trial list,
and a parameter an arm does not have (``heads`` for vanilla, PhenomNN's
parameters for the other backbones, ``num_layers`` for PhenomNN, whose depth is
its unrolled steps) is drawn and then left out (:func:`applicable_hparams`)
without shifting the other draws. The draws are prefix-stable: a search with
more trials starts with the trials of one with fewer.

lr, weight decay, dropout and PhenomNN's lambdas are traced
(:data:`TRACED_TRIAL_HPARAMS`), so all trials with the same static structure
(layers, hidden, heads, PhenomNN's steps: :func:`trial_structure`) train on one
compiled program, which :class:`TrialCache` keeps.

Example::

  space = dict(num_layers=("choice", (1, 2)), hidden=("choice", (64, 128)),
               dropout=("uniform", 0.0, 0.7), lr=("loguniform", 1e-3, 3e-2),
               wd=("loguniform", 1e-6, 1e-2), heads=("choice", (1, 2)),
               lam0=("choice", (1.0, 10.0)), lam1=("choice", (1.0, 10.0)),
               phenom_steps=("choice", (2, 4)))
  cache = panda.TrialCache(data, "hgnn", "panda", epochs=100, runs=3)
  hp = panda.applicable_hparams(panda.draw_trial(space, 0, 5), "hgnn", "panda")
  res = cache.train(hp, panda.trial_keys(0, 0, 5, 3), np.arange(3))  # val/test per run
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers.panda._models import make_model
from jaxpapers.panda._stage import PandaConfig
from jaxpapers.panda._train import (
  TRACED_MODEL_HPARAMS,
  best_val_test,
  make_trainer,
)

__all__ = [
  "SEARCH_SPACE_ORDER",
  "SEARCH_ARMS",
  "TRACED_TRIAL_HPARAMS",
  "check_search_space",
  "draw_trial",
  "applicable_hparams",
  "select_trial",
  "trial_structure",
  "trial_model_fn",
  "structure_model_fn",
  "trial_keys",
  "count_params",
  "match_hidden",
  "TrialCache",
]

# The order in which a trial's parameters are drawn (one uniform number each).
SEARCH_SPACE_ORDER = (
  "num_layers",
  "hidden",
  "dropout",
  "lr",
  "wd",
  "heads",
  "lam0",
  "lam1",
  "phenom_steps",
)
SEARCH_ARMS = ("vanilla", "panda")
_KINDS = ("choice", "uniform", "loguniform")
# Trial values that are traced (one compiled program serves them all); the rest
# are static.
TRACED_TRIAL_HPARAMS = ("lr", "wd", *TRACED_MODEL_HPARAMS)
# The values a structure's model is built with; the traced ones replace them at
# run time (a non-zero dropout, so that every dropout layer exists: see
# ``panda.with_hparams``).
_NOMINAL = dict(dropout=0.5, lam0=1.0, lam1=1.0)


def _check_cell(data, backbone, arm) -> None:
  if not isinstance(data, hg.HypergraphData):
    raise TypeError(f"data must be a HypergraphData, got {type(data).__name__}")
  if backbone not in hg.BACKBONES:
    raise ValueError(
      f"backbone must be one of {sorted(hg.BACKBONES)}, got {backbone!r}"
    )
  if arm not in SEARCH_ARMS:
    raise ValueError(f"arm must be one of {SEARCH_ARMS}, got {arm!r}")


def check_search_space(space: Mapping[str, Sequence[Any]]) -> None:
  """Raises a ValueError naming the parameter when ``space`` is not a valid
  search space.

  Args:
    space: maps every name of :data:`SEARCH_SPACE_ORDER` to
      ``('choice', (v0, v1, ...))``, ``('uniform', lo, hi)`` or
      ``('loguniform', lo, hi)`` (``0 < lo`` for log-uniform).

  Raises:
    ValueError: a parameter is missing or its entry is malformed.
  """
  missing = [k for k in SEARCH_SPACE_ORDER if k not in space]
  if missing:
    raise ValueError(
      f"config.space lacks {missing}; it needs every one of "
      f"{SEARCH_SPACE_ORDER}"
    )
  for name in SEARCH_SPACE_ORDER:
    spec = tuple(space[name])
    kind = spec[0] if spec else None
    if kind not in _KINDS:
      raise ValueError(
        f"config.space[{name!r}] must start with one of {_KINDS}, got {spec!r} "
        "(e.g. ('choice', (64, 128)), ('loguniform', 1e-3, 1e-1))"
      )
    if kind == "choice":
      if (
        len(spec) != 2 or not isinstance(spec[1], (tuple, list)) or not spec[1]
      ):
        raise ValueError(
          f"config.space[{name!r}] must be ('choice', (v0, ...)), got {spec!r}"
        )
    else:
      if len(spec) != 3 or not all(
        isinstance(v, (int, float)) for v in spec[1:]
      ):
        raise ValueError(
          f"config.space[{name!r}] must be ({kind!r}, lo, hi), got {spec!r}"
        )
      lo, hi = spec[1], spec[2]
      if not lo <= hi or (kind == "loguniform" and lo <= 0):
        raise ValueError(
          f"config.space[{name!r}]: need "
          f"{'0 < ' if kind == 'loguniform' else ''}lo <= hi, got lo={lo}, "
          f"hi={hi}"
        )


def draw_trial(
  space: Mapping[str, Sequence[Any]], seed: int, trial: int
) -> dict[str, Any]:
  """Trial ``trial``'s values of every parameter in :data:`SEARCH_SPACE_ORDER`
  (seeded, arm-free).

  One ``u ~ U[0, 1)`` per parameter from ``default_rng([seed, trial])``:
  ``choice`` takes option ``floor(u k)``, ``uniform`` ``lo + u (hi - lo)``,
  ``loguniform`` ``exp(log lo + u (log hi - log lo))``.

  Args:
    space: the search space (see :func:`check_search_space`).
    seed: the search's seed, an int >= 0.
    trial: the trial index, an int >= 0.

  Returns:
    ``{name: value}`` for every name of :data:`SEARCH_SPACE_ORDER` (Python
    scalars).
  """
  check_search_space(space)
  for nm, v in (("seed", seed), ("trial", trial)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
      raise ValueError(f"{nm} must be an int >= 0, got {v!r}")
  u = np.random.default_rng([int(seed), int(trial)]).random(
    len(SEARCH_SPACE_ORDER)
  )
  out = {}
  for name, ui in zip(SEARCH_SPACE_ORDER, u):
    spec = tuple(space[name])
    if spec[0] == "choice":
      opts = tuple(spec[1])
      v = opts[min(int(ui * len(opts)), len(opts) - 1)]
      out[name] = v.item() if isinstance(v, np.generic) else v
    elif spec[0] == "uniform":
      out[name] = float(spec[1] + ui * (spec[2] - spec[1]))
    else:
      lo, hi = math.log(spec[1]), math.log(spec[2])
      out[name] = float(math.exp(lo + ui * (hi - lo)))
  return out


def applicable_hparams(
  values: Mapping[str, Any], backbone: str, arm: str
) -> dict[str, Any]:
  """The drawn values that a (backbone, arm) model has.

  Args:
    values: a trial's draws (:func:`draw_trial`).
    backbone: ``'gedi'``, ``'hgnn'``, ``'hypergcn'`` or ``'phenomnn'``.
    arm: ``'vanilla'`` or ``'panda'``.

  Returns:
    ``values`` without ``heads`` (vanilla), ``num_layers`` (PhenomNN) or
    PhenomNN's ``lam0``, ``lam1``, ``phenom_steps`` (the other backbones).
  """
  if arm not in SEARCH_ARMS:
    raise ValueError(f"arm must be one of {SEARCH_ARMS}, got {arm!r}")
  if backbone not in hg.BACKBONES:
    raise ValueError(
      f"backbone must be one of {sorted(hg.BACKBONES)}, got {backbone!r}"
    )
  out = dict(values)
  if arm == "vanilla":
    out.pop("heads")
  if backbone == "phenomnn":
    out.pop("num_layers")
  else:
    for k in ("lam0", "lam1", "phenom_steps"):
      out.pop(k)
  return out


def select_trial(trials: Sequence[Mapping[str, Any]]) -> int:
  """Index of the trial with the highest mean validation accuracy (the first one
  on a tie).

  Means within 1e-9 of the best count as ties (accuracies are ratios of counts,
  and a float mean of equal counts in another order can differ in its last bit).

  Args:
    trials: one mapping per trial with ``'val'``, its runs' validation
      accuracies.

  Returns:
    The selected trial's position in ``trials``.
  """
  if not trials:
    raise ValueError("select: no trials")
  means = np.array([float(np.mean(t["val"])) for t in trials])
  return int(np.flatnonzero(means >= means.max() - 1e-9)[0])


def trial_structure(hp: Mapping[str, Any]) -> tuple:
  """The static part of a trial's values (layers, hidden, heads, PhenomNN
  steps), sorted.

  Trials of one (dataset, backbone, arm) with equal structures share one
  compiled program.

  Args:
    hp: a trial's applicable values (:func:`applicable_hparams`).

  Returns:
    ``((name, value), ...)`` of the values not in :data:`TRACED_TRIAL_HPARAMS`,
    by name.
  """
  if not isinstance(hp, Mapping):
    raise TypeError(
      f"hp must be a mapping of a trial's values, got {type(hp).__name__}"
    )
  return tuple(
    sorted((k, v) for k, v in hp.items() if k not in TRACED_TRIAL_HPARAMS)
  )


def trial_model_fn(
  data: hg.HypergraphData, backbone: str, arm: str, hp: Mapping[str, Any]
) -> Callable[[nnx.Rngs], nnx.Module]:
  """``rngs -> model`` for one trial's values.

  Args:
    data: the backbone's input (:func:`jaxpapers.hypergraph.backbone_input`).
    backbone: the backbone name.
    arm: ``'vanilla'`` or ``'panda'`` (a :class:`PandaConfig` with the trial's
      ``heads``).
    hp: the trial's applicable values (:func:`applicable_hparams`).

  Returns:
    A function building the model from its parameter streams.
  """
  _check_cell(data, backbone, arm)
  kw: dict[str, Any] = dict(
    hidden=int(hp["hidden"]), dropout=float(hp["dropout"])
  )
  if backbone == "phenomnn":
    kw.update(
      num_steps=int(hp["phenom_steps"]),
      lam0=float(hp["lam0"]),
      lam1=float(hp["lam1"]),
    )
  else:
    kw["num_layers"] = int(hp["num_layers"])
  cfg = None if arm == "vanilla" else PandaConfig(heads=int(hp["heads"]))
  f, k = int(data.x.shape[1]), data.num_classes
  return lambda rngs: make_model(
    backbone, cfg, in_features=f, num_classes=k, rngs=rngs, **kw
  )


def structure_model_fn(
  data: hg.HypergraphData, backbone: str, arm: str, hp: Mapping[str, Any]
) -> Callable[[nnx.Rngs], nnx.Module]:
  """``rngs -> model`` of ``hp``'s structure, the one its trials' compiled
  program trains.

  The traced values (dropout, PhenomNN's lam0 and lam1) are set to nominal ones:
  every trial of the structure passes its own at run time, so the program does
  not depend on which trial built it.

  Args:
    data: the backbone's input.
    backbone: the backbone name.
    arm: ``'vanilla'`` or ``'panda'``.
    hp: the trial's applicable values.

  Returns:
    A function building the structure's model from its parameter streams.
  """
  nominal = {k: v for k, v in _NOMINAL.items() if k in hp}
  return trial_model_fn(data, backbone, arm, dict(hp, **nominal))


def trial_keys(seed: int, phase: int, index: int, runs: int) -> jax.Array:
  """The search's run keys.

  Args:
    seed: the search's seed.
    phase: 0 for a search trial, 1 for a final re-run.
    index: the trial (phase 0) or the initialisation (phase 1).
    runs: how many keys.

  Returns:
    ``[runs]`` typed keys ``fold_in(fold_in(fold_in(key(seed), phase), index),
    s)``.
  """
  for nm, v in (("seed", seed), ("index", index), ("runs", runs)):
    if (
      isinstance(v, bool)
      or not isinstance(v, (int, np.integer))
      or v < (nm == "runs")
    ):
      raise ValueError(f"{nm} must be an int >= {int(nm == 'runs')}, got {v!r}")
  if phase not in (0, 1) or isinstance(phase, bool):
    raise ValueError(
      f"phase must be 0 (search trial) or 1 (final re-run), got {phase!r}"
    )
  base = jax.random.fold_in(
    jax.random.fold_in(jax.random.key(seed), phase), index
  )
  return jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.arange(runs))


def count_params(model_fn: Callable[[nnx.Rngs], nnx.Module]) -> int:
  """Trainable parameters of ``model_fn(rngs)`` (abstract init, no compute).

  Args:
    model_fn: ``rngs -> model``.

  Returns:
    The number of scalars in the model's ``nnx.Param`` leaves.
  """
  if not callable(model_fn):
    raise TypeError(
      "model_fn must be a callable rngs -> model, "
      f"got {type(model_fn).__name__}"
    )
  state = nnx.state(nnx.eval_shape(lambda: model_fn(nnx.Rngs(0))), nnx.Param)
  return int(sum(np.prod(x.shape) for x in jax.tree.leaves(state)))


def match_hidden(
  data: hg.HypergraphData,
  backbone: str,
  arm: str,
  hp: Mapping[str, Any],
  target: int,
  *,
  max_hidden: int = 4096,
) -> tuple[int, int]:
  r"""The ``hidden`` width that brings a trial's model closest to ``target``
  parameters.

  The parameter count :math:`P(h)` of :func:`trial_model_fn` with ``hidden = h``
  (every other value of ``hp`` kept) is non-decreasing in ``h``; bisection finds
  the smallest :math:`h^+` with :math:`P(h^+) \ge` ``target``, and the result is
  whichever of :math:`h^+ - 1` and :math:`h^+` has the smaller :math:`|P(h) /
  \mathrm{target} - 1|` (the smaller width on a tie). An equal-parameter search
  gives the PANDA arm of a trial the width at which it has as many parameters as
  the vanilla arm of the same draw.

  Args:
    data: the backbone's input (:func:`jaxpapers.hypergraph.backbone_input`).
    backbone: the backbone name.
    arm: ``'vanilla'`` or ``'panda'``.
    hp: the trial's applicable values (:func:`applicable_hparams`); ``hidden``
      is replaced.
    target: the parameter count to match, an int >= 1.
    max_hidden: the widest width tried (an int >= 1).

  Returns:
    ``(hidden, params)``: the chosen width and its model's trainable parameter
    count. The caller checks the ratio ``params / target``; it is far from 1
    only when even ``hidden = 1`` has more than ``target`` parameters or
    ``max_hidden`` has fewer.
  """
  for nm, v, lo in (("target", target, 1), ("max_hidden", max_hidden, 1)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
      raise ValueError(f"{nm} must be an int >= {lo}, got {v!r}")
  memo: dict[int, int] = {}

  def p(h: int) -> int:
    if h not in memo:
      memo[h] = count_params(
        trial_model_fn(data, backbone, arm, dict(hp, hidden=h))
      )
    return memo[h]

  lo, hi = 1, int(max_hidden)
  if p(hi) < target:
    return hi, p(hi)
  while lo < hi:  # invariant: p(hi) >= target; the answer h+ lies in [lo, hi]
    mid = (lo + hi) // 2
    if p(mid) >= target:
      hi = mid
    else:
      lo = mid + 1
  cands = [h for h in (hi - 1, hi) if h >= 1]
  best = min(cands, key=lambda h: (abs(p(h) / target - 1.0), h))
  return best, p(best)


class TrialCache:
  """The compiled trial programs of one (data, backbone), one per arm and
  structure.

  :meth:`train` runs a trial's values on given splits and keys, in batches of
  ``runs`` vmapped runs (the last one padded by repeating its last run), so that
  a final re-run of a trial's configuration reuses the trial's compiled program;
  a run's result does not depend on the other runs of its batch.
  ``runs_per_program`` makes the program's batch smaller: the same runs, keys
  and splits then go through it a few at a time, which divides the memory one
  call holds (every run's temporaries) at no extra arithmetic; results agree up
  to float rounding, since a vmapped matrix product may sum in another order.

  Args:
    data: the backbone's input (:func:`jaxpapers.hypergraph.backbone_input`).
    backbone: the backbone name.
    epochs: epochs per run.
    runs: runs per batch (a search trial's splits).
    fast_compile: compile with :data:`jaxpapers.panda.FAST_COMPILE`.
    runs_per_program: None (``runs``) or a positive int, the runs per program
      call.
  """

  def __init__(
    self,
    data: hg.HypergraphData,
    backbone: str,
    *,
    epochs: int,
    runs: int,
    fast_compile: bool = False,
    runs_per_program: int | None = None,
  ):
    _check_cell(data, backbone, SEARCH_ARMS[0])
    for nm, v in (("epochs", epochs), ("runs", runs)):
      if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{nm} must be a positive int, got {v!r}")
    rpp = runs_per_program
    if rpp is not None and (
      isinstance(rpp, bool) or not isinstance(rpp, (int, np.integer)) or rpp < 1
    ):
      raise ValueError(
        f"runs_per_program must be None or a positive int, got {rpp!r}"
      )
    self.data, self.backbone, self.epochs = data, backbone, int(epochs)
    self.fast_compile = bool(fast_compile)
    self.batch = int(runs) if rpp is None else min(int(rpp), int(runs))
    self._programs: dict[tuple, tuple[Callable[..., Any], int]] = {}

  def program(
    self, arm: str, hp: Mapping[str, Any]
  ) -> tuple[Callable[..., Any], int]:
    """The compiled trainer and parameter count of ``hp``'s structure (built
    once).

    Args:
      arm: ``'vanilla'`` or ``'panda'``.
      hp: the trial's applicable values.

    Returns:
      ``(trainer, params)``: :func:`jaxpapers.panda.make_trainer`'s function and
      the model's trainable parameter count.
    """
    key = (arm, trial_structure(hp))
    if key not in self._programs:
      fn = structure_model_fn(self.data, self.backbone, arm, hp)
      self._programs[key] = (
        make_trainer(fn, self.epochs, fast_compile=self.fast_compile),
        count_params(fn),
      )
    return self._programs[key]

  def __len__(self) -> int:
    return len(self._programs)

  def train(
    self,
    arm: str,
    hp: Mapping[str, Any],
    keys: jax.Array,
    splits: Sequence[int] | np.ndarray,
  ) -> dict[str, Any]:
    """Runs ``hp`` on ``splits[i]`` with ``keys[i]``; per-run best-validation
    results.

    Args:
      arm: ``'vanilla'`` or ``'panda'``.
      hp: the trial's applicable values (lr, wd and the traced model values
        included).
      keys: ``[N]`` typed keys, one per run.
      splits: ``[N]`` split indices, one per run.

    Returns:
      ``dict(val, test, epoch, params)``: per run the validation and test
      accuracy at its best-validation epoch and that epoch (lists of length N),
      and the parameter count.
    """
    run, params = self.program(arm, hp)
    n, b = len(splits), self.batch
    traced = {k: float(hp[k]) for k in TRACED_MODEL_HPARAMS if k in hp}
    va, te, ep = [], [], []
    for i in range(0, n, b):
      idx = np.minimum(np.arange(i, i + b), n - 1)
      hist = run(
        self.data,
        keys[idx],
        np.full(b, hp["lr"]),
        np.full(b, hp["wd"]),
        np.asarray(splits)[idx],
        **{k: np.full(b, v) for k, v in traced.items()},
      )
      v, t, e = best_val_test(jax.tree.map(np.asarray, hist))
      m = min(b, n - i)
      va += v[:m].tolist()
      te += t[:m].tolist()
      ep += e[:m].tolist()
    return dict(val=va, test=te, epoch=ep, params=params)
