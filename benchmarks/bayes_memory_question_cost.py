"""Process time of one question of the greedy experiment (SmolLM2, shared-prompt scoring).

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
  PYTHONPATH=. python benchmarks/bayes_memory_question_cost.py --groups=2 \
      --out=experiments/bayes_memory/results/question_cost.json

Scores ``--groups`` scoring groups of ``configs/greedy.py`` with ``scoring='shared'`` exactly
as the experiment does (``train.score_dialogues``: every question's y and y' in the contexts
none, placebo, each turn, all turns as prefix trees; the pooled features; the greedy turn sets,
one bucketed row batch per greedy step), on dialogues ``--first`` onwards in the experiment's
dialogue-major order, and records per group the process time (CPU seconds of this process,
all threads; single-threaded XLA above) split into the three phases, the jit traces (one per
compilation) and the questions scored. The first group pays the compilations; later groups
show the steady cost and any recompilation (tree level shapes change with the rows).
"""

import argparse
import collections
import json
import os
import subprocess
import time

import jax

from experiments.bayes_memory import train
from experiments.bayes_memory.configs import greedy, smoke
from jaxpapers import bayes_memory as bm

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--tiny", action="store_true", help="the smoke config's tiny random LM")
  ap.add_argument("--groups", type=int, default=2)
  ap.add_argument("--first", type=int, default=16, help="first dialogue index of each seed")
  ap.add_argument("--out", default="bayes_memory_question_cost.json")
  a = ap.parse_args()
  c = smoke.get_config() if a.tiny else greedy.get_config()
  c.scoring = "shared"
  model = train.load_model(c)
  cfg, params, _ = model
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)
  n = a.first + -(-a.groups * c.group_dialogues // len(c.seeds))
  ds = train.make_dialogues(c, n_dialogues=n)
  order = [(s, i) for i in range(a.first, n) for s in c.seeds]

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

  bm.score_rows_shared = timed("prefix_trees", bm.score_rows_shared)  # (this process only)
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
  for j in range(a.groups):
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
    print(json.dumps(groups[-1]), flush=True)
  res = dict(
    command="PYTHONPATH=. python benchmarks/bayes_memory_question_cost.py "
    f"--groups={a.groups} --first={a.first}" + (" --tiny" if a.tiny else ""),
    xla_flags=os.environ.get("XLA_FLAGS", ""),
    config=f"experiments/bayes_memory/configs/{'smoke' if a.tiny else 'greedy'}.py, scoring=shared",
    groups=groups,
    git=subprocess.run(
      ["git", "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip(),
  )
  with open(a.out, "w") as f:
    json.dump(res, f, indent=1)


if __name__ == "__main__":
  main()
