"""Where a Dual-Rate training seed spends its CPU time: step, compile,
evaluation.

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    python -m benchmarks.dual_rate_step [--quick] [--steps 10]

Networks of ``experiments/dual_rate/configs/default.py`` (digits, batch 64): the
single-network baseline (ViT), the dual-rate pair (ViT encoder + conv denoiser,
stale-context loss), the no-feature control (conv denoiser alone) and the MMD
step of a 2-step baseline student (student, auxiliary denoiser and the frozen
teacher passed as an argument). For each, with ``time.process_time()`` (CPU
seconds of this process, so the numbers do not depend on how many other
processes share the host; wall seconds beside them):

* ``step_cpu_s``: one training step once compiled (median of ``--steps`` steps;
  the experiment's step, :func:`make_step` here, and its host batch);
* ``host_batch_cpu_s``: the host part of a step (index draw, ``jnp.asarray``,
  key folding);
* ``compile_cpu_s_first_seed``: the first call of a fresh jitted step, minus one
  step (XLA compile dominates: tracing and lowering take well under a second);
* ``first_call_cpu_s_next_seed_before`` / ``_after``: the first step of the same
  network for another training seed, before (a fresh loss closure per seed and
  an unmemoised step: a full recompile for every network of every seed) and
  after (the run's single loss object and the memoised factories
  :data:`memoised_step` and :data:`memoised_optimizer`: the compiled program is
  reused), with the two steps' outputs checked bitwise equal. (A persistent XLA
  compilation cache does not help here: the cache key of identical steps built
  from different closures differed, so every lookup missed.)

Evaluation: ``extract_features`` + ``classifier_accuracy`` per sampled setting
and seed, before (a ``jax.jit`` of a fresh lambda per call: a retrace and
recompile every call) and after (one module-level jitted program), checked
equal, and the compilations of the later calls; and the sampler's compilations
over the refresh intervals K = 2, 4, 8 after K = 1 (the refresh set is traced:
one program per N).

``--quick``: the evaluation part only, with the networks of ``configs/smoke.py``
and 1 call (each training-step program takes 10-15 CPU s to compile, even at the
smoke config's sizes).

The networks, losses and optimizer are the library's (``dr.SingleNetwork``,
``dr.DualRateModel``, ``dr.diffusion_loss``, ``dr.dual_rate_loss``,
``dr.MMDPair``, ``dr.mmd_pair_loss``, ``dr.training_optimizer``) at the
experiment's settings (read from its config files), and so is the step:
``dr.fit_step`` (``core.TrainState``, one ``jax.jit`` per (structure, loss),
memoised), timed against its unmemoised factory for the before/after.
"""

from __future__ import annotations

import functools
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from benchmarks._setup import experiment_config
from jaxpapers import core
from jaxpapers import dual_rate as dr
from jaxpapers.core import benchmark as bench

NAME = "dual_rate_step"


def _clock():
  return time.process_time(), time.perf_counter()


def _since(c):
  return time.process_time() - c[0], time.perf_counter() - c[1]


def copy_module(model):
  return nnx.merge(*nnx.split(model))


# The library's training step: ``dr.fit_step`` memoises one program per
# (graphdef, loss_fn); its unwrapped factory gives a new program on every call,
# as every seed paid before.
memoised_step = dr.fit_step
make_step = dr.fit_step.__wrapped__


# AdamW with warmup + cosine decay, clipping and the EMA tracker: a fresh object
# per call.
optimizer = dr.training_optimizer

memoised_optimizer = functools.cache(optimizer)


def _networks(cfg, ncls, seed=0):
  """The experiment's single-network baseline (ViT) and dual-rate pair on digits
  8x8."""
  return dr.build_networks(
    cfg, image_size=8, channels=1, num_classes=ncls, seed=seed
  )


def _cases(cfg, base, pair):
  """(name, model factory, loss factory, consts) for each network; factories
  give fresh closures, as each training seed of the experiment did before the
  losses were built once."""
  sched = dr.NoiseSchedule()

  def base_loss():  # a fresh loss object per call
    def loss(m, x, c, k, consts):
      del consts
      return dr.diffusion_loss(
        m, x, c, k, schedule=sched, weighting=cfg.weighting
      )

    return loss

  def dual_loss(use_features):
    def fresh():
      def loss(m, x, c, k, consts):
        del consts
        return dr.dual_rate_loss(
          m,
          x,
          c,
          k,
          schedule=sched,
          num_grid_steps=tuple(cfg.train_grid_steps),
          max_staleness=cfg.max_staleness,
          p_fresh=cfg.p_fresh,
          coupling=cfg.coupling,
          rollout_frac=cfg.rollout_frac,
          weighting=cfg.weighting,
          use_features=use_features,
        )

      return loss

    return fresh

  tg, tstate = nnx.split(base)

  def mmd_loss():
    def loss(pair, x, c, key, teacher_state):
      teacher = nnx.merge(tg, teacher_state)
      return dr.mmd_pair_loss(
        pair, teacher, x, c, key, schedule=sched, num_student_steps=2
      )

    return loss

  return [
    ("baseline", lambda: copy_module(base), base_loss, None),
    ("dual-rate pair", lambda: copy_module(pair), dual_loss(True), None),
    ("no-features", lambda: copy_module(pair), dual_loss(False), None),
    (
      "mmd-baseline (2 steps)",
      lambda: dr.MMDPair(copy_module(base), copy_module(base)),
      mmd_loss,
      tstate,
    ),
  ]


def _make(model, loss, consts, step_factory, fresh_tx=False):
  # as before: a new optimizer object (a static field of the state) per network
  if fresh_tx:
    tx = optimizer(1e-3, 1000, 100, 0.995)
  else:
    tx = memoised_optimizer(1e-3, 1000, 100, 0.995)
  state = core.TrainState.create(model, tx)
  return state, functools.partial(
    step_factory(state.graphdef, loss), consts=consts
  )


def _batch_fn(xs, ys, batch):
  def fn(step):
    rng = np.random.default_rng([0, 1, step])
    idx = rng.integers(0, xs.shape[0], batch)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(0), 1), step)
    return jnp.asarray(xs[idx]), jnp.asarray(ys[idx]), key

  return fn


def _first_call(state, step, batch):
  c = _clock()
  out = jax.block_until_ready(step(state, batch))
  return _since(c), out


def _same(a, b):
  la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
  return len(la) == len(lb) and all(
    np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb)
  )


def bench_steps(cfg, data, ncls, steps):
  """Seed A: a fresh step (compile) and its steady-state cost. Seed B (other
  initial values, same structure): before, a fresh step per seed
  (:func:`make_step`: what every seed paid); after, :data:`memoised_step` with
  the run's single loss object (the compiled program of seed A), checked equal
  to the fresh one."""
  batch_fn = _batch_fn(
    data["train_images"], data["train_labels"], cfg.batch_size
  )
  b0 = batch_fn(0)
  seed_a, seed_b = (
    _cases(cfg, *_networks(cfg, ncls, 0)),
    _cases(cfg, *_networks(cfg, ncls, 10)),
  )
  out = {}
  for (name, model_a, loss_fn, consts_a), (_, model_b, _, consts_b) in zip(
    seed_a, seed_b
  ):
    loss = loss_fn()  # one loss object per run, as train_and_evaluate builds it
    state, step = _make(model_a(), loss, consts_a, memoised_step)
    (cpu0, wall0), _ = _first_call(state, step, b0)
    state, step = _make(model_a(), loss, consts_a, memoised_step)
    state, _ = step(state, b0)
    cpus, walls, host = [], [], []
    for s in range(1, steps + 1):
      c = _clock()
      b = batch_fn(s)
      host.append(_since(c)[0])
      state, m = step(state, b)
      jax.block_until_ready(m)
      cc, ww = _since(c)
      cpus.append(cc)
      walls.append(ww)
    step_cpu, step_wall = statistics.median(cpus), statistics.median(walls)
    # Seed B: before (fresh jit of a fresh loss closure) and after (memoised).
    state_b, step_before = _make(
      model_b(), loss_fn(), consts_b, make_step, fresh_tx=True
    )
    (cpu_before, wall_before), res_before = _first_call(
      state_b, step_before, b0
    )
    state_b, step_after = _make(model_b(), loss, consts_b, memoised_step)
    (cpu_after, wall_after), res_after = _first_call(state_b, step_after, b0)
    out[name] = {
      "step_cpu_s": step_cpu,
      "step_wall_s": step_wall,
      "host_batch_cpu_s": statistics.median(host),
      "compile_cpu_s_first_seed": cpu0 - step_cpu,
      "first_call_cpu_s_next_seed_before": cpu_before,
      "first_call_cpu_s_next_seed_after": cpu_after,
      "first_call_wall_s_next_seed_before": wall_before,
      "first_call_wall_s_next_seed_after": wall_after,
      "same_structure_across_seeds": bool(
        nnx.graphdef(model_a()) == nnx.graphdef(model_b())
      ),
      "reused_step_gives_same_values": _same(res_before, res_after),
    }
    print(name, out[name], flush=True)
  return out


def _old_extract_features(classifier, images, batch_size=256):
  """extract_features as it was: a jit of a fresh lambda per call."""
  graphdef, state = nnx.split(classifier)
  f = jax.jit(lambda st, x: nnx.merge(graphdef, st).features(x))
  images = np.asarray(images, np.float32)
  n = images.shape[0]
  images = np.concatenate(
    [images, np.zeros(((-n) % batch_size,) + images.shape[1:], np.float32)]
  )
  out = [
    np.asarray(f(state, images[i : i + batch_size]))
    for i in range(0, len(images), batch_size)
  ]
  return np.concatenate(out)[:n].astype(np.float64)


def _old_accuracy(classifier, images, labels):
  graphdef, state = nnx.split(classifier)
  logits = jax.jit(lambda st, x: nnx.merge(graphdef, st)(x))(
    state, jnp.asarray(images)
  )
  return float(
    np.mean(np.asarray(jnp.argmax(logits, -1)) == np.asarray(labels))
  )


def bench_eval(cfg, data, ncls, calls=5):
  """Evaluation before/after one module-level jitted program; the sampler's
  compilations."""
  clf = dr.train_classifier(
    data["train_images"],
    data["train_labels"],
    num_classes=ncls,
    steps=20,
    seed=0,
  )
  x = np.asarray(data["test_images"][:300], np.float32)
  y = np.asarray(data["test_labels"][:300])
  res = {}
  for label, feat, acc in [
    ("before", _old_extract_features, _old_accuracy),
    ("after", dr.extract_features, dr.classifier_accuracy),
  ]:
    times = []
    # the first call (compiles in both versions)
    f, a = feat(clf, x), acc(clf, x, y)
    with bench.count_compilations() as compiles:
      for _ in range(calls):
        c = _clock()
        f = feat(clf, x)
        a = acc(clf, x, y)
        times.append(_since(c)[0])
    res[label] = {
      "cpu_s_per_call": statistics.median(times),
      "features": f,
      "accuracy": a,
      "compilations_in_later_calls": compiles.count,
    }
  same = np.array_equal(
    res["before"]["features"], res["after"]["features"]
  ) and (res["before"]["accuracy"] == res["after"]["accuracy"])
  out = {
    "features_and_accuracy_cpu_s_per_call_before": res["before"][
      "cpu_s_per_call"
    ],
    "features_and_accuracy_cpu_s_per_call_after": res["after"][
      "cpu_s_per_call"
    ],
    "same_values": bool(same),
    "compilations_in_later_calls_before": res["before"][
      "compilations_in_later_calls"
    ],
    "compilations_in_later_calls_after": res["after"][
      "compilations_in_later_calls"
    ],
  }
  # The sampler: the refresh set is traced, so one program per N over every K.
  base, pair = _networks(cfg, ncls)
  labels = jnp.asarray(np.arange(64) % ncls, jnp.int32)
  key = jax.random.key(0)
  refresh = {k: dr.refresh_schedule(16, interval=k) for k in (1, 2, 4, 8)}

  def sample(k):
    return dr.sample(
      pair, key, (64, 8, 8, 1), num_steps=16, refresh=refresh[k], cond=labels
    )

  jax.block_until_ready(sample(1))
  with bench.count_compilations() as compiles:
    for k in (2, 4, 8):
      jax.block_until_ready(sample(k))
  out["sampler_compilations_for_K_2_4_8_after_K_1_at_N16"] = compiles.count
  print(out, flush=True)
  return out


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--steps", type=int, default=10)
  return p.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()
  cfg = experiment_config("dual_rate", "smoke" if args.quick else "default")
  kw = {"num_test": cfg.num_test} if cfg.get("num_test", 0) else {}
  data, ncls = dr.load_numpy(cfg.dataset, **kw), dr.num_classes(cfg.dataset)
  t0 = time.process_time()
  steps = {} if args.quick else bench_steps(cfg, data, ncls, args.steps)
  ev = bench_eval(cfg, data, ncls, calls=1 if args.quick else 5)
  rows = [{"case": f"train step: {name}", **v} for name, v in steps.items()]
  rows.append({"case": "evaluation", **ev})
  summary = []
  # What one training seed of configs/seeds.py pays for its four networks' step
  # programs. fresh-only ~ pair
  nets = ["baseline", "dual-rate pair", "no-features", "dual-rate pair"]
  nets = [n for n in nets if n in steps]
  before = sum(steps[n]["first_call_cpu_s_next_seed_before"] for n in nets)
  after = sum(steps[n]["first_call_cpu_s_next_seed_after"] for n in nets)
  rows.append(
    {
      "case": "per-seed training estimate (CPU s)",
      "networks": nets,
      "steps": sum(steps[n]["step_cpu_s"] for n in nets) * cfg.train_steps,
      "first_calls_per_seed_before": before,
      "first_calls_per_seed_after_first_seed": after,
      "xla_flags": os.environ.get("XLA_FLAGS", ""),
      "benchmark_cpu_s": time.process_time() - t0,
    }
  )
  if nets:
    summary.append(
      bench.summary(
        (
          f"first step calls of a further seed ({len(nets)} networks): "
          "fresh programs / memoised"
        ),
        before / after,
        ">= 1",
        note=(
          "process CPU time; the memoised step reuses the first seed's "
          "compiled program"
        ),
      )
    )
  summary.append(
    bench.summary(
      (
        "features + accuracy per call: a fresh jit per call / one "
        "module-level program"
      ),
      ev["features_and_accuracy_cpu_s_per_call_before"]
      / ev["features_and_accuracy_cpu_s_per_call_after"],
      ">= 1",
      note="process CPU time",
    )
  )
  summary.append(
    bench.summary(
      (
        "sampler compilations for refresh intervals K = 2, 4, "
        "8 after K = 1 (N = 16)"
      ),
      ev["sampler_compilations_for_K_2_4_8_after_K_1_at_N16"],
      "== 0",
      unit="compiles",
    )
  )
  # train_steps and evaluation keep the layout the dual_rate README reads
  extra = {"train_steps": steps, "evaluation": ev}
  bench.write(
    NAME, args, rows=rows, summary=summary, host=host, argv=argv, extra=extra
  )


if __name__ == "__main__":
  main()
