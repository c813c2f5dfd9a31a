"""Process time of one question of the greedy experiment (SmolLM2, shared-prompt
scoring).

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
  python -m benchmarks.bayes_memory_question_cost [--quick] [--tiny] --groups=2

Scores ``--groups`` scoring groups of ``configs/greedy.py`` with shared-prompt
scoring as the experiment does, through the library's functions: every
question's y and y' in the contexts none, placebo, each turn, all turns as
prefix trees (``bm.dialogue_rows``, ``bm.score_rows_shared``); the pooled
features (``bm.pooled_text_features``); the greedy turn sets
(``bm.greedy_select``), one bucketed row batch per greedy step
(``bm.subset_rows``, ``bm.score_rows_bucketed``). It starts at dialogue
``--first`` in the experiment's dialogue-major order and records per group the
process time (CPU seconds of this process, all threads; single-threaded XLA
above) split into the three phases, the jit traces (one per compilation) and the
questions scored. The first group pays the compilations; later groups show the
steady cost and any recompilation (tree level shapes change with the rows).
``--quick``: the smoke config's tiny random LM (``--tiny``), two groups from
dialogue 0.
"""

from __future__ import annotations

import collections
import contextlib
import os
import time

import jax
import numpy as np

from benchmarks._setup import (
  bayes_memory_dialogues,
  bayes_memory_lm,
  experiment_config,
)
from jaxpapers import bayes_memory as bm
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_question_cost"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"


def score_group(ds, params, cfg, tok, fn, c, clock):
  """The LM evidence of one scoring group: shared-prompt rows, pooled features,
  greedy sets.

  ``clock(name)`` is a context manager that times a phase. Returns the log-probs
  of the rows (one dict per dialogue: ``(question, kind) -> [columns]``) and the
  greedy selections.
  """
  big = max(c.buckets)
  rows, where, owner = [], [], []
  for g, d in enumerate(ds):
    r, w = bm.dialogue_rows(d, tok, max_len=big)
    rows += r
    where += w
    owner += [g] * len(r)
  keys = [((o, col), qi) for o, (qi, _, col) in zip(owner, where)]
  with clock("prefix_trees"):
    lp, _ = bm.score_rows_shared(
      params,
      rows,
      keys,
      config=cfg,
      max_targets=c.max_targets,
      buckets=c.buckets,
    )
  table = [collections.defaultdict(dict) for _ in ds]
  for v, o, (qi, kind, col) in zip(lp, owner, where):
    table[o][qi, kind][col] = float(v)
  with clock("features"):
    for d in ds:
      texts = list(d.turns) + [q.x for q in d.queries]
      bm.pooled_text_features(
        params, texts, tok, config=cfg, max_len=c.feature_len
      )
  if c.greedy_k <= 0:
    return table, []
  qs = [(g, qi) for g, d in enumerate(ds) for qi in range(len(d.queries))]

  # [(group question, kind, subset)]: one bucketed batch for the sets > 1
  def score(requests):
    out = np.full(len(requests), np.nan)
    todo = []
    for r, (q, kind, sub) in enumerate(requests):
      g, qi = qs[q]
      if len(sub) <= 1:
        out[r] = table[g][qi, kind].get(2 + sub[0] if sub else 0, np.nan)
      elif kind == "y" or ds[g].queries[qi].y_alt is not None:
        todo.append(r)
    if todo:
      reqs = [requests[r] for r in todo]
      sub_rows = [
        bm.subset_rows(ds[qs[q][0]], tok, [(qs[q][1], kind, sub)], max_len=big)[
          0
        ]
        for q, kind, sub in reqs
      ]
      with clock("greedy_rows"):
        out[todo] = bm.score_rows_bucketed(
          fn, sub_rows, buckets=c.buckets, batch_tokens=c.batch_tokens
        )[0]
    return out

  turns = [len(ds[g].turns) for g, _ in qs]
  sel = bm.greedy_select(
    lambda reqs: score([(q, "y", sub) for q, sub in reqs]),
    turns,
    k_max=c.greedy_k,
    tau=c.tau,
  )
  score([(q, "alt", tuple(sorted(s.selected))) for q, s in enumerate(sel)])
  return table, sel


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument(
    "--tiny", action="store_true", help=("the smoke config's tiny random LM")
  )
  p.add_argument("--groups", type=int, default=2)
  p.add_argument(
    "--first", type=int, default=16, help=("first dialogue index of each seed")
  )
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  tiny = a.tiny or a.quick
  n_groups, first = (2, 0) if a.quick else (a.groups, a.first)
  c = experiment_config("bayes_memory", "smoke" if tiny else "greedy")
  c.scoring = "shared"
  cfg, params, tok = bayes_memory_lm(c)
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)
  n = first + -(-n_groups * c.group_dialogues // len(c.seeds))
  ds = {s: bayes_memory_dialogues(c, s, n) for s in c.seeds}
  order = [(s, i) for i in range(first, n) for s in c.seeds]

  # Phase clocks: the LM entry points of the three phases.
  clock = collections.Counter()

  @contextlib.contextmanager
  def timed(name):
    t = time.process_time()
    try:
      yield
    finally:
      clock[name] += time.process_time() - t

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
    score_group([ds[s][i] for s, i in grp], params, cfg, tok, fn, c, timed)
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
  config = (
    f"experiments/bayes_memory/configs/{'smoke' if tiny else 'greedy'}.py, "
    "scoring=shared"
  )
  rows = [
    dict(
      case=f"group {j}",
      config=config,
      xla_flags=os.environ.get("XLA_FLAGS", ""),
      **g,
    )
    for j, g in enumerate(groups)
  ]
  summary = []
  if len(groups) >= 2:
    summary.append(
      bench.summary(
        "process CPU time per question: first group (compiles) / last group",
        groups[0]["process_s_per_question"]
        / groups[-1]["process_s_per_question"],
        ">= 1",
        note=f"{config}; the last group's jit traces: {groups[-1]['n_traces']}",
      )
    )
  bench.write(NAME, a, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
