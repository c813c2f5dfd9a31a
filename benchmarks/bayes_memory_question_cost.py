"""Process time of one question of the greedy experiment (SmolLM2, shared-prompt scoring).

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
  python -m benchmarks.bayes_memory_question_cost [--quick] [--tiny] --groups=2

Scores ``--groups`` scoring groups of ``configs/greedy.py`` with ``scoring='shared'`` exactly
as the experiment does (``train.score_dialogues``: every question's y and y' in the contexts
none, placebo, each turn, all turns as prefix trees; the pooled features; the greedy turn sets,
one bucketed row batch per greedy step), on dialogues ``--first`` onwards in the experiment's
dialogue-major order, and records per group the process time (CPU seconds of this process,
all threads; single-threaded XLA above) split into the three phases, the jit traces (one per
compilation) and the questions scored. The first group pays the compilations; later groups
show the steady cost and any recompilation (tree level shapes change with the rows).
``--quick``: the smoke config's tiny random LM (``--tiny``), two groups from dialogue 0.

It times the experiment's private phases (``train._score_rows``, ``train._pool``) by wrapping
them: the cost measured is that of the experiment's own code.
"""

from __future__ import annotations

import collections
import os
import time

import jax

from experiments.bayes_memory import train
from experiments.bayes_memory.configs import greedy, smoke
from jaxpapers import bayes_memory as bm
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_question_cost"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--tiny", action="store_true", help="the smoke config's tiny random LM")
  p.add_argument("--groups", type=int, default=2)
  p.add_argument("--first", type=int, default=16, help="first dialogue index of each seed")
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  tiny = a.tiny or a.quick
  n_groups, first = (2, 0) if a.quick else (a.groups, a.first)
  c = smoke.get_config() if tiny else greedy.get_config()
  c.scoring = "shared"
  model = train.load_model(c)
  cfg, params, _ = model
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)
  n = first + -(-n_groups * c.group_dialogues // len(c.seeds))
  ds = train.make_dialogues(c, n_dialogues=n)
  order = [(s, i) for i in range(first, n) for s in c.seeds]

  # Phase clocks: wrap the three LM entry points the experiment calls.
  clock = collections.Counter()

  def timed(name, f):
    def g(*args, **kw):
      t = time.process_time()
      try:
        return f(*args, **kw)
      finally:
        clock[name] += time.process_time() - t

    return g

  # (this process only; restored at the end)
  originals = (bm.score_rows_shared, train._score_rows, train._pool)
  bm.score_rows_shared = timed("prefix_trees", bm.score_rows_shared)
  train._score_rows = timed("greedy_rows", train._score_rows)
  train._pool = timed("features", train._pool)
  traces = collections.Counter()

  def listener(event, duration, **kw):
    del duration
    if event == TRACE_EVENT:
      traces[kw.get("fun_name", "?")] += 1

  jax.monitoring.register_event_duration_secs_listener(listener)
  groups = []
  G = c.group_dialogues
  for j in range(n_groups):
    grp = order[j * G : (j + 1) * G]
    clock.clear()
    traces.clear()
    t, w = time.process_time(), time.perf_counter()
    train.score_dialogues([ds[s][i] for s, i in grp], model, fn, c)
    cpu = time.process_time() - t
    nq = sum(len(ds[s][i].queries) for s, i in grp)
    groups.append(
      dict(
        dialogues=[[int(s), int(i)] for s, i in grp],
        questions=nq,
        process_s=cpu,
        wall_s=time.perf_counter() - w,
        process_s_per_question=cpu / nq,
        phases_process_s=dict(clock),
        traces=dict(traces),
        n_traces=sum(traces.values()),
        loadavg_1min=os.getloadavg()[0],
      )
    )
    print(groups[-1], flush=True)
  jax.monitoring.unregister_event_duration_listener(listener)
  bm.score_rows_shared, train._score_rows, train._pool = originals
  config = f"experiments/bayes_memory/configs/{'smoke' if tiny else 'greedy'}.py, scoring=shared"
  rows = [
    dict(case=f"group {j}", config=config, xla_flags=os.environ.get("XLA_FLAGS", ""), **g)
    for j, g in enumerate(groups)
  ]
  summary = []
  if len(groups) >= 2:
    summary.append(
      bench.summary(
        "process CPU time per question: first group (compiles) / last group",
        groups[0]["process_s_per_question"] / groups[-1]["process_s_per_question"],
        ">= 1",
        note=f"{config}; the last group's jit traces: {groups[-1]['n_traces']}",
      )
    )
  bench.write(NAME, a, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
