"""Shared-prompt scoring vs the row path on the bayes_memory experiment's rows,
side by side.

  python -m benchmarks.bayes_memory_shared_prompt [--quick] [--tiny] --dialogues=6 --repeats=2

The rows are those of the default config's first ``--dialogues`` dialogues of
seed 0 (one scoring group: every question's reference y and contrast y' in the
contexts no memory, placebo, each turn alone, all turns). Two ways to get the
same log-probs, in one process:

* rows: ``bm.score_rows_bucketed`` (the experiment's row path): every row run in
  full, right-padded into the length buckets, ``batch_tokens`` per forward;
* shared: ``bm.score_rows_shared`` with keys ((dialogue, context), question):
  one prefix tree per length bucket, the memory block run once for the
  dialogue's questions and each prompt once for y and y'.

Each path is called once to compile (timed separately), then the two alternate
``--repeats`` times (alternating evens out the load of a shared machine); the
JSON records the median times, the speed-up, the real and padded token counts
and the largest difference of the log-probs. ``--quick`` scores 2 dialogues with
the smoke config's tiny random LM (``--tiny``), once.

The rows come from ``bm.dialogue_rows``, the row builder the experiment scores
with.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._setup import (
  bayes_memory_dialogues,
  bayes_memory_lm,
  experiment_config,
)
from jaxpapers import bayes_memory as bm
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_shared_prompt"


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument(
    "--tiny", action="store_true", help=("the smoke config's tiny random LM")
  )
  p.add_argument("--dialogues", type=int, default=6)
  p.add_argument("--repeats", type=int, default=2)
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  tiny = a.tiny or a.quick
  n_dialogues, repeats = (2, 1) if a.quick else (a.dialogues, a.repeats)
  c = experiment_config("bayes_memory", "smoke" if tiny else "default")
  cfg, params, tok = bayes_memory_lm(c)
  default = experiment_config("bayes_memory", "default")
  c.buckets, c.batch_tokens = default.buckets, default.batch_tokens
  ds = bayes_memory_dialogues(c, 0, n_dialogues=n_dialogues)
  rows, keys = [], []
  for g, d in enumerate(ds):
    r, where = bm.dialogue_rows(d, tok, max_len=max(c.buckets))
    rows += r
    keys += [((g, col), qi) for qi, _, col in where]
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)

  def run_rows():
    return bm.score_rows_bucketed(
      fn, rows, buckets=c.buckets, batch_tokens=c.batch_tokens
    )

  def run_shared():
    return bm.score_rows_shared(
      params,
      rows,
      keys,
      config=cfg,
      max_targets=c.max_targets,
      buckets=c.buckets,
    )

  paths = {"rows": run_rows, "shared": run_shared}
  first, times, out = {}, {k: [] for k in paths}, {}
  for k, f in paths.items():
    t = time.perf_counter()
    out[k] = f()
    first[k] = time.perf_counter() - t
  for _ in range(repeats):
    for k, f in paths.items():
      t = time.perf_counter()
      f()
      times[k].append(time.perf_counter() - t)
  lp_rows, padded_rows = out["rows"]
  lp_shared, stats = out["shared"]
  med = {k: float(np.median(v)) for k, v in times.items()}
  real = sum(int(r[1].sum()) for r in rows)
  row = dict(
    case="rows_vs_shared_prefix",
    model=c.model,
    dialogues=n_dialogues,
    rows=len(rows),
    buckets=list(c.buckets),
    batch_tokens=c.batch_tokens,
    rows_real_tokens=real,
    rows_padded_tokens=int(padded_rows),
    shared_real_tokens=stats["real_tokens"],
    shared_padded_tokens=stats["padded_tokens"],
    first_call_s=first,
    times_s=times,
    median_s=med,
    max_abs_diff_logprob=float(np.abs(lp_rows - lp_shared).max()),
    max_rel_diff_logprob=float(
      np.max(np.abs(lp_rows - lp_shared) / np.abs(lp_rows))
    ),
  )
  summary = [
    bench.summary(
      "shared-prompt scoring vs the row path, median time",
      med["rows"] / med["shared"],
      ">= 1",
      note=f"{c.model}, {n_dialogues} dialogues; warm-up excluded",
    ),
    bench.summary(
      "padded tokens: row path / shared prefix trees",
      padded_rows / stats["padded_tokens"],
      ">= 1",
    ),
    bench.summary(
      "largest relative difference of the log-probs, shared vs rows",
      row["max_rel_diff_logprob"],
      "<= 1e-4",
      unit="",
      note="float32 round-off",
    ),
  ]
  bench.write(NAME, a, rows=[row], summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
