"""Forward time and compiled memory of multi-view models as the number of views
grows.

The paper's efficiency claim is that FlashSSM-3D's cost grows linearly with the
number of views (its bidirectional scans run over the tokens of all views),
where an alternating-attention teacher's grows quadratically.
:func:`view_scaling` measures both on the same inputs: for each view count S it
compiles the jitted forward of each model on a ``[1, S, H, W, 3]`` batch, reads
XLA's buffer estimate (``compiled.memory_analysis()``, deterministic and known
before running), and times warm forward calls, in wall-clock time and in process
CPU time (all of XLA's threads). On a shared host the wall time of a call also
counts the time spent waiting for a core, which grows with the call's length, so
a log-log slope of wall times overstates the growth of the work; CPU time does
not count the wait.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxpapers.flashssm3d import _models
from jaxpapers.flashssm3d._scaling_fit import scaling_summary


def scaling_models(
  *,
  width: int,
  depth: int,
  patch: int,
  image_size: int,
  state: int,
  heads: int,
  associative: bool = False,
) -> dict[str, nnx.Module]:
  """The models whose forward cost the view-scaling study compares, at one size.

  Each has a camera head of one stage and is initialised from ``nnx.Rngs(0)``.

  Args:
    width: token width ``D`` of every model.
    depth: blocks of every model.
    patch: patch side ``p`` in pixels.
    image_size: side ``H = W`` of the input frames (divisible by ``patch``).
    state: SSM state size ``N`` of the students.
    heads: attention heads of the teacher (dividing ``width``).
    associative: also the student with ``lax.associative_scan``.

  Returns:
    ``{"student_ssm": FlashSSM3D with the sequential lax.scan[,
    "student_ssm_associative": the same with lax.associative_scan],
    "teacher_attention": AATeacher}``, each called as ``model(images [B, S, H,
    W, 3])``.

  Raises:
    ValueError: sizes the model configs reject (e.g. ``image_size`` not
      divisible by ``patch``).
  """
  scfg = _models.FlashSSM3DConfig(
    width=width,
    depth=depth,
    patch=patch,
    image_size=image_size,
    state=state,
    camera_stages=1,
  )
  out: dict[str, nnx.Module] = {
    "student_ssm": _models.FlashSSM3D(scfg, rngs=nnx.Rngs(0))
  }
  if associative:
    acfg = dataclasses.replace(scfg, method="associative")
    out["student_ssm_associative"] = _models.FlashSSM3D(acfg, rngs=nnx.Rngs(0))
  tcfg = _models.TeacherConfig(
    width=width,
    depth=depth,
    patch=patch,
    image_size=image_size,
    heads=heads,
    camera_stages=1,
  )
  out["teacher_attention"] = _models.AATeacher(tcfg, rngs=nnx.Rngs(0))
  return out


def compiled_memory_bytes(compiled) -> int:
  """Arguments + outputs + temporaries - aliased bytes of a compiled program
  (XLA's estimate).

  Args:
    compiled: a ``jax.stages.Compiled`` (``jax.jit(f).lower(*args).compile()``).

  Returns:
    The byte count, or -1 where the backend has no memory analysis.
  """
  try:
    m = compiled.memory_analysis()
    return int(
      m.argument_size_in_bytes
      + m.output_size_in_bytes
      + m.temp_size_in_bytes
      - getattr(m, "alias_size_in_bytes", 0)
    )
  except Exception:  # pragma: no cover - backend without memory analysis
    return -1


def view_scaling(
  models: Mapping[str, nnx.Module],
  views: Sequence[int],
  *,
  image_size: int,
  repeats: int = 3,
  memory_cap_gb: float = 4.0,
  time_cap_s: float = 12.0,
  log: Callable[[str], None] = print,
) -> dict[str, dict[str, list]]:
  """Forward time and compiled memory of each model at each number of views
  (batch 1).

  For each model, in order, and each S in ``views``: the jitted forward on
  uniform images of shape ``[1, S, image_size, image_size, 3]`` is compiled
  (timed), its buffer estimate read; a model whose estimate exceeds
  ``memory_cap_gb`` is not run at S (and not at larger S), one whose median
  forward takes longer than ``time_cap_s`` is not run at larger S. Otherwise one
  warm-up call, then ``repeats`` timed calls (wall clock and process CPU time,
  ``block_until_ready``).

  Args:
    models: name -> a multi-view model called as ``model(images [B, S, H, W,
      3])``, e.g. :class:`FlashSSM3D` and :class:`AATeacher`.
    views: the view counts S, increasing.
    image_size: H = W of each view.
    repeats: timed calls per size (>= 1); the median is reported.
    memory_cap_gb: the largest buffer estimate (GiB) a model is run with.
    time_cap_s: a model stops after the first size whose median forward exceeds
      this.
    log: called with one line per measured size.

  Returns:
    name -> ``{"time_s", "cpu_s", "memory_mib", "compile_s", "time_s_repeats",
    "cpu_s_repeats"}``, each a list with one entry per view count: the median
    forward wall time and the median process CPU time of a forward (NaN where
    not run), the buffer estimate in MiB (NaN where not compiled), the compile
    time (NaN where not compiled) and the timed calls' wall and CPU times.

  Raises:
    ValueError: empty ``views`` or ``models``, a view count < 1,
      ``repeats < 1``.
  """
  views = [int(v) for v in views]
  if not views or min(views) < 1:
    raise ValueError(
      f"views must be a non-empty sequence of ints >= 1, got {views!r}"
    )
  if not models:
    raise ValueError("models must name at least one model")
  if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
    raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
  out = {}
  for name, model in models.items():
    graphdef, state = nnx.split(model)
    fwd = jax.jit(lambda s, x, graphdef=graphdef: nnx.merge(graphdef, s)(x))
    times, cpus, mems, compiles, all_times, all_cpus = [], [], [], [], [], []
    stopped = False
    for S in views:
      if stopped:
        times.append(float("nan"))
        cpus.append(float("nan"))
        mems.append(float("nan"))
        compiles.append(float("nan"))
        all_times.append([])
        all_cpus.append([])
        continue
      x = jax.random.uniform(
        jax.random.key(S), (1, S, image_size, image_size, 3)
      )
      t0 = time.perf_counter()
      compiled = fwd.lower(state, x).compile()
      compiles.append(time.perf_counter() - t0)
      mem = compiled_memory_bytes(compiled)
      if mem > memory_cap_gb * 2**30:
        log(
          f"[scaling] {name} S={S}: estimated {mem / 2**30:.1f} GiB > cap, "
          "stopping"
        )
        times.append(float("nan"))
        cpus.append(float("nan"))
        mems.append(mem / 2**20)
        all_times.append([])
        all_cpus.append([])
        stopped = True
        continue
      jax.block_until_ready(compiled(state, x))  # warm-up
      ts, cs = [], []
      for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(compiled(state, x))
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
      # median of the timed repeats (the warm-up call excluded)
      t = float(np.median(ts))
      times.append(t)
      cpus.append(float(np.median(cs)))
      all_times.append(ts)
      all_cpus.append(cs)
      mems.append(mem / 2**20)
      log(
        f"[scaling] {name} S={S}: {t * 1e3:.1f} ms ({cpus[-1] * 1e3:.1f} ms "
        f"CPU), {mem / 2**20:.1f} MiB"
      )
      if t > time_cap_s:
        stopped = True
    out[name] = {
      "time_s": times,
      "cpu_s": cpus,
      "memory_mib": mems,
      "compile_s": compiles,
      "time_s_repeats": all_times,
      "cpu_s_repeats": all_cpus,
    }
  return out


def scaling_study(
  views: Sequence[int],
  *,
  width: int,
  depth: int,
  patch: int,
  image_size: int,
  state: int,
  heads: int,
  fit_min_views: int,
  associative: bool = False,
  repeats: int = 3,
  memory_cap_gb: float = 4.0,
  time_cap_s: float = 12.0,
  log: Callable[[str], None] = print,
) -> dict[str, Any]:
  """The view-scaling study: :func:`scaling_models` swept by
  :func:`view_scaling`, then fitted.

  Args:
    views: ``[m]`` view counts ``S``, increasing.
    width: token width of every model (:func:`scaling_models`).
    depth: blocks of every model.
    patch: patch side in pixels.
    image_size: side ``H = W`` of the input frames (divisible by ``patch``).
    state: SSM state size of the students.
    heads: attention heads of the teacher.
    fit_min_views: the smallest view count in the fits
      (:func:`scaling_summary`).
    associative: also the student with ``lax.associative_scan``.
    repeats: timed calls per size (:func:`view_scaling`).
    memory_cap_gb: the largest buffer estimate (GiB) a model is run with.
    time_cap_s: a model stops after the first size whose median forward exceeds
      this.
    log: called with one line per measured size.

  Returns:
    ``{"views": [m], "tokens_per_view": (image_size // patch)^2, "params":
    {model: count}, <model>: its :func:`scaling_summary` entry}`` for each model
    of :func:`scaling_models`.

  Raises:
    ValueError: sizes the model configs reject, or arguments
      :func:`view_scaling` rejects.
  """
  models = scaling_models(
    width=width,
    depth=depth,
    patch=patch,
    image_size=image_size,
    state=state,
    heads=heads,
    associative=associative,
  )
  out = {
    "views": list(views),
    "tokens_per_view": (image_size // patch) ** 2,
    "params": {k: _models.count_params(m) for k, m in models.items()},
  }
  sweep = view_scaling(
    models,
    views,
    image_size=image_size,
    repeats=repeats,
    memory_cap_gb=memory_cap_gb,
    time_cap_s=time_cap_s,
    log=log,
  )
  return {**out, **scaling_summary(views, sweep, fit_min_views=fit_min_views)}
