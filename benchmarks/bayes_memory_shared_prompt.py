"""Shared-prompt scoring vs the row path on the bayes_memory experiment's rows, side by side.

  PYTHONPATH=. python benchmarks/bayes_memory_shared_prompt.py --dialogues=6 --repeats=2 \
      --out=experiments/bayes_memory/results/shared_prompt.json

The rows are those of the default config's first ``--dialogues`` dialogues of seed 0 (one
scoring group: every question's reference y and contrast y' in the contexts no memory, placebo,
each turn alone, all turns). Two ways to get the same log-probs, in one process:

* rows: ``train._score_rows`` (the experiment's path): every row run in full, right-padded into
  the length buckets, ``batch_tokens`` per forward;
* shared: ``bm.score_rows_shared`` with keys ((dialogue, context), question): one prefix tree
  per length bucket, the memory block run once for the dialogue's questions and each prompt
  once for y and y'.

Each path is called once to compile (timed separately), then the two alternate ``--repeats``
times (alternating evens out the load of a shared machine); the JSON records the median times,
the speed-up, the real and padded token counts and the largest difference of the log-probs.
"""

import argparse
import json
import os
import subprocess
import time

import numpy as np

from experiments.bayes_memory import train
from experiments.bayes_memory.configs import default, smoke
from jaxpapers import bayes_memory as bm


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--tiny", action="store_true", help="the smoke config's tiny random LM")
  ap.add_argument("--dialogues", type=int, default=6)
  ap.add_argument("--repeats", type=int, default=2)
  ap.add_argument("--out", default="bayes_memory_shared_prompt.json")
  a = ap.parse_args()
  c = smoke.get_config() if a.tiny else default.get_config()
  cfg, params, tok = train.load_model(c)
  c.buckets = default.get_config().buckets
  c.batch_tokens = default.get_config().batch_tokens
  ds = train.seed_dialogues(c, 0, n_dialogues=a.dialogues)
  rows, keys = [], []
  for g, d in enumerate(ds):
    r, where = train._dialogue_rows(d, tok, c)
    rows += r
    keys += [((g, col), qi) for qi, _, col in where]
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)

  def run_rows():
    return train._score_rows(fn, rows, c)

  def run_shared():
    return bm.score_rows_shared(
      params, rows, keys, config=cfg, max_targets=c.max_targets, buckets=c.buckets
    )

  paths = {"rows": run_rows, "shared": run_shared}
  first, times, out = {}, {k: [] for k in paths}, {}
  for k, f in paths.items():
    t = time.perf_counter()
    out[k] = f()
    first[k] = time.perf_counter() - t
  for _ in range(a.repeats):
    for k, f in paths.items():
      t = time.perf_counter()
      f()
      times[k].append(time.perf_counter() - t)
  lp_rows, padded_rows = out["rows"]
  lp_shared, stats = out["shared"]
  med = {k: float(np.median(v)) for k, v in times.items()}
  real = sum(int(r[1].sum()) for r in rows)
  res = dict(
    command="PYTHONPATH=. python benchmarks/bayes_memory_shared_prompt.py "
    f"--dialogues={a.dialogues} --repeats={a.repeats}" + (" --tiny" if a.tiny else ""),
    model=c.model,
    dialogues=a.dialogues,
    rows=len(rows),
    buckets=list(c.buckets),
    batch_tokens=c.batch_tokens,
    tokens={
      "rows_real": real,
      "rows_padded": int(padded_rows),
      "shared_real": stats["real_tokens"],
      "shared_padded": stats["padded_tokens"],
    },
    padded_token_ratio=padded_rows / stats["padded_tokens"],
    real_token_ratio=real / stats["real_tokens"],
    first_call_s=first,
    times_s=times,
    median_s=med,
    speedup=med["rows"] / med["shared"],
    max_abs_diff_logprob=float(np.abs(lp_rows - lp_shared).max()),
    max_rel_diff_logprob=float(np.max(np.abs(lp_rows - lp_shared) / np.abs(lp_rows))),
    loadavg_1min_at_end=os.getloadavg()[0],
    git=subprocess.run(
      ["git", "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip(),
  )
  print(json.dumps(res, indent=1))
  with open(a.out, "w") as f:
    json.dump(res, f, indent=1)


if __name__ == "__main__":
  main()
