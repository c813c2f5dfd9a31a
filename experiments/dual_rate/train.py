"""Quality against compute for Dual-Rate Diffusion, the single-network baseline
and MMD.

Phase 1 trains the feature classifier and measures the real-vs-real floor
(``evaluate.Evaluator``). Then every training seed (``train_seeds``, or ``seed``
alone) runs the phases of :data:`PHASES`, each one resumable ``core.CellStore``
cell: its networks trained for the same steps (``dr.fit``, checkpointed) and
sampled at several N and K with exact call counts, FLOPs and wall time.
results.json is rewritten after every new cell from the cells that exist, so a
partial run is a valid (smaller) result and a rerun resumes at the first missing
cell.
"""

from __future__ import annotations

import functools
import pathlib
import time

import jax.numpy as jnp
import numpy as np
from absl import logging
from flax import nnx

from experiments.dual_rate import evaluate as evaluation
from experiments.dual_rate.configs import default as default_config

# re-judged by experiments.reproduce
from experiments.dual_rate.evaluate import derived_metrics
from jaxpapers import core
from jaxpapers import dual_rate as dr

__all__ = [
  "PHASES",
  "derived_metrics",
  "load_data",
  "merge_phases",
  "train_and_evaluate",
]

# The phases of one training seed, in the order they run: the main claim's
# networks first (baseline + pair, with their refresh-kind and EDM-Heun rows),
# then the controls (a), (b), (d), then distillation. Each is a method of
# `_SeedRun`.
PHASES = ("main", "no_features", "fresh_only", "couplings", "mmd")


def _log(msg, t0):
  logging.info("[dual_rate %.1fs] %s", time.perf_counter() - t0, msg)


def _copy(model):
  return nnx.merge(*nnx.split(model))


def load_data(cfg):
  """``(data, num_classes)``: digits / shapes in memory; 'imagenet64' from a
  prepared TFDS ``data_dir`` (full config; ``dr.load_imagenet64``)."""
  if cfg.dataset in dr.DATASETS:
    # num_test: the held-out split, which sets the largest N of the real-vs-real
    # floor.
    kw = {"num_test": cfg.num_test} if cfg.num_test else {}
    return dr.load_numpy(cfg.dataset, **kw), dr.num_classes(cfg.dataset)
  core.validate_choice(
    cfg.dataset, name="dataset", allowed=dr.DATASETS + ("imagenet64",)
  )
  # The held-out images: N for the floor, 2 N with a held-out reference
  # (dr.fd_splits).
  per = 2 if cfg.fd_reference == "heldout" else 1
  data = dr.load_imagenet64(
    core.resolve_data_dir(cfg.data_dir),
    num_test=per * cfg.num_eval_samples,
    seed=cfg.seed,
    classifier_subset=cfg.classifier_subset,
  )
  return data, 1000


def _record_name(name):
  """Training-record key of a network: 'no_features' -> 'no-features',
  'dual_rate_ddim' -> 'dual-rate/ddim'; 'baseline' and 'dual_rate' unchanged."""
  if name.startswith("dual_rate_"):
    return "dual-rate/" + name[len("dual_rate_") :]
  return {"no_features": "no-features", "fresh_only": "fresh-only"}.get(
    name, name
  )


def merge_phases(parts):
  """One training seed's record from its phases' records (rows in phase
  order)."""
  out = {"rows": [], "train_seconds": {}, "train_final_loss": {}, "grids": {}}
  for p in parts:
    out["rows"] += list(p["rows"])
    out["train_seconds"].update(p["train_seconds"])
    out["train_final_loss"].update(p["train_final_loss"])
    out["grids"].update(p["grids"])
    out.setdefault("flops", p["flops"])
    out.setdefault("params", p["params"])
  return out


class _Run:
  """What every cell shares: the data, the evaluator (phase 1) and the losses,
  built once per run so that seeds after the first reuse the compiled steps
  (``dr.fit_step``)."""

  def __init__(self, cfg, workdir: pathlib.Path):
    self.cfg, self.workdir, self.t_start = cfg, workdir, time.perf_counter()
    self.data, self.num_classes = load_data(cfg)
    self.evaluator = evaluation.Evaluator.build(
      cfg, self.data, self.num_classes, dr.NoiseSchedule()
    )
    _log(
      f"classifier trained, floor {self.evaluator.proxy.floor}", self.t_start
    )
    names = (
      "weighting train_grid_steps max_staleness p_fresh coupling rollout_frac"
    ).split()
    self.base_loss, self.dual_loss = dr.make_losses(
      self.evaluator.schedule, **{n: cfg[n] for n in names}
    )
    self.mmd_losses = {}
    # (seed, networks(seed)) of the seed being run
    self.seed_nets = (None, None)

  def networks(self, seed: int):
    """``(baseline, pair, flops, params)``: the seed's initial networks, their
    per-call FLOPs and parameter counts, built once and shared by the seed's
    phases (seeds run in turn)."""
    if self.seed_nets[0] != seed:
      img, chans = self.evaluator.proxy.shape[1], self.evaluator.proxy.shape[3]
      base, dual = dr.build_networks(
        self.cfg,
        image_size=img,
        channels=chans,
        num_classes=self.num_classes,
        seed=seed,
      )
      one, c1 = jnp.zeros((1, img, img, chans)), jnp.zeros((1,), jnp.int32)
      sched = self.evaluator.schedule
      flops = {
        m: dr.component_flops(net, one, c1, schedule=sched)
        for m, net in (("baseline", base), ("dual", dual))
      }
      flops["no_features"] = {"network": flops["dual"]["denoiser"]}
      params = {
        "baseline": dr.count_params(base),
        "encoder": dr.count_params(dual.encoder),
        "denoiser": dr.count_params(dual.denoiser),
      }
      self.seed_nets = (seed, (base, dual, flops, params))
    return self.seed_nets[1]


class _SeedRun:
  """One phase (:data:`PHASES`) of one training seed: trains its networks under
  the seed's folder and samples their settings (:meth:`record`). A network is
  trained (or restored from its checkpoint) on first use, so rows already stored
  need no network."""

  def __init__(self, run: _Run, seed: int, phase: str):
    self.run, self.phase, self.seed = run, phase, seed
    self.cfg = cfg = run.cfg
    self.sub_dir = run.workdir / f"train_seed{seed}"
    self.sub_dir.mkdir(parents=True, exist_ok=True)
    # The couplings (d) and EDM-Heun (f) run for the extra_control_seeds (() ->
    # every seed).
    self.extra = seed in (tuple(cfg.extra_control_seeds) or (seed,))
    self.baseline, self.dual_init, self.flops, self.params = run.networks(seed)
    self.trained = {}  # name -> (EMA model, history, seconds)
    self.train_seconds, self.final_loss, self.mmd_time = {}, {}, {}
    self.rows, self.grids = [], {}
    # Finished rows are cells of the seed's folder: a resumed run (or one with
    # more settings) does not sample them again.
    self.row_store = core.CellStore(self.sub_dir / "rows")
    self.timed = tuple(cfg.time_methods) or None

  def fit(self, model, loss_fn, *, name, **kw):
    """``dr.fit`` on the run's data with the seed's batch, checkpoint and device
    settings."""
    cfg, data = self.cfg, self.run.data
    kw |= dict(
      warmup_steps=cfg.warmup_steps, batch_size=cfg.batch_size, seed=self.seed
    )
    kw |= dict(checkpoint_every=cfg.checkpoint_every, prefetch=cfg.prefetch)
    kw |= dict(data_parallel=cfg.data_parallel, workdir=self.sub_dir)
    return dr.fit(
      model,
      loss_fn,
      data["train_images"],
      data["train_labels"],
      name=name,
      **kw,
    )

  def net(self, name, loss_fn, phase="main"):
    """The trained network ``name``; its training record counts for ``phase``,
    the phase that trains it."""
    if name not in self.trained:
      init = (
        _copy(self.baseline) if name == "baseline" else _copy(self.dual_init)
      )
      cfg = self.cfg
      self.trained[name] = self.fit(
        init,
        loss_fn,
        name=name,
        steps=cfg.train_steps,
        learning_rate=cfg.learning_rate,
        ema_decay=cfg.ema_decay,
      )
      if phase == self.phase:
        _, hist, sec = self.trained[name]
        self.train_seconds[_record_name(name)] = sec
        self.final_loss[_record_name(name)] = (
          hist[-1].get("train/loss") if hist else None
        )
    return self.trained[name][0]

  def baseline_net(self):
    return self.net("baseline", self.run.base_loss)

  def dual_net(self):
    return self.net("dual_rate", self.run.dual_loss())

  def evaluate(
    self,
    method,
    model,
    num_steps,
    interval,
    sampler,
    flops_key,
    kind=("uniform"),
  ):
    """The row of one sampler setting of ``model()``: read from the row store,
    or sampled and stored."""
    ev, cfg = self.run.evaluator, self.run.cfg
    key = (
      f"{method}|{num_steps}|{interval}|{sampler}|{kind}|{len(cfg.eval_seeds)}"
    )
    key += f"|{ev.proxy.shape[0]}"  # N, the samples per sampling seed
    # rows of another reference are other rows
    if ev.proxy.reference != "train":
      key += f"|{ev.proxy.reference}"
    if key in self.row_store:
      self.rows.append(self.row_store[key])
      return
    row, grid = ev.row(
      model(),
      method=method,
      num_steps=num_steps,
      interval=interval,
      sampler=sampler,
      flops=self.flops[flops_key],
      flops_key=flops_key,
      kind=kind,
      timed=self.timed is None or method in self.timed,
    )
    self.grids.setdefault((method, num_steps, interval), grid)
    self.rows.append(row)
    self.row_store.put(key, row)
    msg = (
      f"{method} N={num_steps} K={interval} {kind} {sampler}: "
      f"FD {row['fd_mean']:.3f}"
    )
    _log(f"{msg} at {row['mflops_per_sample']:.2f} MFLOPs", self.run.t_start)

  def main(self):
    """The baseline and the pair: their rows, the refresh kinds and EDM-Heun
    (f)."""
    cfg, base, dual = self.cfg, self.baseline_net, self.dual_net
    base(), dual()  # each trained network is reused by every sampler setting
    _log(
      f"trained baseline and dual-rate: {self.train_seconds}", self.run.t_start
    )
    for n in cfg.baseline_steps:
      self.evaluate("baseline", base, n, 1, cfg.sampler, "baseline")
    for n in cfg.dual_steps:
      for k in cfg.dual_intervals:
        self.evaluate("dual-rate", dual, n, k, cfg.sampler, "dual")
    for kind in cfg.refresh_kinds:
      for n in cfg.dual_steps:
        k = cfg.refresh_kind_interval
        self.evaluate(
          f"dual-rate/{kind}", dual, n, k, cfg.sampler, "dual", kind
        )
    for n in cfg.heun_steps if self.extra else ():
      self.evaluate("baseline/heun", base, n, 1, "heun", "baseline")
      for k in cfg.heun_intervals:
        self.evaluate("dual-rate/heun", dual, n, k, "heun", "dual")

  # Controls, each from the pair's initialisation and for the same number of
  # steps.

  def no_features(self):
    """(a) The light denoiser alone with constant (zero) features."""
    cfg = self.cfg
    if cfg.control_no_features:
      loss = self.run.dual_loss(use_features=False)
      m = functools.partial(self.net, "no_features", loss, "no_features")
      for n in cfg.no_feature_steps:
        self.evaluate("no-features", m, n, 1, cfg.sampler, "no_features")

  def fresh_only(self):
    """(b) The pair trained on fresh context only (K_max = 1), sampled with K >
    1."""
    cfg = self.cfg
    if cfg.control_fresh_only:
      loss = self.run.dual_loss(max_staleness=1)
      m = functools.partial(self.net, "fresh_only", loss, "fresh_only")
      for n in cfg.dual_steps:
        for k in cfg.fresh_only_intervals:
          self.evaluate("fresh-only", m, n, k, cfg.sampler, "dual")

  def couplings(self):
    """(d) Other couplings of the stale-context objective (for the
    extra_control_seeds)."""
    cfg = self.cfg
    for coupling in cfg.control_couplings if self.extra else ():
      loss = self.run.dual_loss(coupling=coupling)
      m = functools.partial(
        self.net, f"dual_rate_{coupling}", loss, "couplings"
      )
      for n in cfg.dual_steps:
        for k in (k for k in cfg.dual_intervals if k > 1):
          self.evaluate(f"dual-rate/{coupling}", m, n, k, cfg.sampler, "dual")

  def distill(self, teacher, k, is_dual):
    """A factory of the MMD student of ``teacher()`` with ``k`` steps. The
    frozen teacher's parameters are an argument of the jitted step (consts), not
    a closure."""
    cfg, mmd_losses = self.cfg, self.run.mmd_losses

    def student():
      t = teacher()
      tg, tstate = nnx.split(t)
      if (tg, k, is_dual) not in mmd_losses:
        refresh = (
          dr.refresh_schedule(k, interval=cfg.mmd_dual_interval)
          if is_dual
          else None
        )
        mmd_losses[tg, k, is_dual] = dr.mmd_step_loss(
          tg, self.run.evaluator.schedule, k, refresh
        )
      name = f"mmd_{'dual' if is_dual else 'baseline'}_{k}"
      pair, _, sec = self.fit(
        dr.MMDPair(_copy(t), _copy(t)),
        mmd_losses[tg, k, is_dual],
        name=name,
        steps=cfg.mmd_train_steps,
        learning_rate=cfg.mmd_learning_rate,
        ema_decay=0.0,
        consts=tstate,
      )
      self.mmd_time[name] = sec
      return pair.student

    return student

  def mmd(self):
    """Moment matching distillation of the baseline and of the pair."""
    cfg = self.cfg
    for k in cfg.mmd_steps:
      student = self.distill(self.baseline_net, k, False)
      self.evaluate("mmd-baseline", student, k, 1, "ancestral", "baseline")
    for k in cfg.mmd_dual_steps:
      student = self.distill(self.dual_net, k, True)
      self.evaluate(
        "mmd-dual-rate", student, k, cfg.mmd_dual_interval, "ancestral", "dual"
      )

  def record(self):
    """The phase's JSON-able record (rows, FLOPs, parameters, training times,
    sample grids)."""
    getattr(self, self.phase)()
    return {
      "rows": self.rows,
      "flops": self.flops,
      "params": self.params,
      "train_seconds": {**self.train_seconds, **self.mmd_time},
      "train_final_loss": self.final_loss,
      "grids": {
        "|".join(map(str, k)): np.asarray(v).tolist()
        for k, v in self.grids.items()
      },
    }


def write_results(run: _Run, per_seed: dict, cells, config) -> dict:
  """results.json and the sample grids from the per-seed records (``cells``: the
  stored cell names and those not stored; ``config``: the run's config, with its
  claims and report)."""
  cfg, ev = run.cfg, run.evaluator
  metrics, notes = evaluation.summarize(
    per_seed, cfg, ev.proxy.floor, ev.proxy.shape[0], cells
  )
  grids = {"real (test)": run.data["test_images"][: cfg.grid_samples]}
  first = per_seed[next(iter(per_seed))]["grids"]
  for m, n, k in evaluation.sample_grid_keys(cfg):
    if f"{m}|{n}|{k}" in first:
      grids[f"{m} N={n} K={k}"] = np.asarray(first[f"{m}|{n}|{k}"])
  core.reporting.save_image_grids(run.workdir, "samples", grids)
  wall = time.perf_counter() - run.t_start
  core.write_results(
    run.workdir, metrics=metrics, config=config, notes=notes, wall_time_s=wall
  )
  return metrics


def train_and_evaluate(config, workdir) -> dict:
  """Runs phase 1 and every (training seed, phase) cell, resuming from
  ``workdir``."""
  cfg = core.config_view(config, default_config.get_config())
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  core.validate_choice(cfg.sampler, name="sampler", allowed=dr.SAMPLERS)
  core.validate_choice(cfg.coupling, name="coupling", allowed=dr.COUPLINGS)
  core.validate_seeds(tuple(cfg.eval_seeds), name="eval_seeds")
  seeds = tuple(cfg.train_seeds) or (cfg.seed,)
  core.validate_seeds(seeds, name="train_seeds")
  run = _Run(cfg, workdir)
  store = core.CellStore(workdir / "cells")
  all_cells = [f"train_seed={s}/{ph}" for s in seeds for ph in PHASES]

  def write(parts):
    cells = (list(store), [n for n in all_cells if n not in store])
    return write_results(
      run, {s: merge_phases(v) for s, v in parts.items()}, cells, config
    )

  parts = {}
  for s in seeds:
    for ph in PHASES:
      name = f"train_seed={s}/{ph}"
      done = name in store
      val = store.get_or_compute(
        name, lambda _, s=s, ph=ph: _SeedRun(run, s, ph).record()
      )
      parts.setdefault(s, []).append(val)
      if not done:
        _log(f"cell {name} done", run.t_start)
        write(parts)
  return write(parts)
