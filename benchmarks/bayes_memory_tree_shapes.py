"""Recompilations and padding of shared-prompt scoring on the greedy run's groups (host only).

  python -m benchmarks.bayes_memory_tree_shapes [--quick]

No forward pass: builds, for the scoring groups of the 204-question greedy run that were scored
with shared-prompt scoring (dialogues 16-33 of seeds 0-2, 6 per group, dialogue-major), the
prefix trees of ``bm.score_rows_shared`` and counts their distinct level shapes (one compilation
of the tree forward each) and their padded tokens (the forward's cost), with the level sizes
rounded as now (multiples of 8) or to a geometric ladder (steps of a half or a quarter of the
power of two below the size). Also counts the padding of the greedy steps' rows (every 2- and
3-turn subset of each question, y) in the configured row buckets and in finer ones.
``--quick``: 4 dialogues per seed from dialogue 0, with a word tokenizer (no model load).

A what-if study of private code: it replaces ``jaxpapers.bayes_memory._prefix``'s tree forward
(shapes only) and its size rounding, and builds rows with the experiment's private
``train._dialogue_rows``. It has no target, so its record has no summary entries.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from experiments.bayes_memory import train
from experiments.bayes_memory.configs import greedy
from jaxpapers import bayes_memory as bm
from jaxpapers import lm
from jaxpapers.bayes_memory import _prefix
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_tree_shapes"


def _ladder(frac_bits):
  def round_up(n, m):
    n = max(n, m)
    step = max(m, 2 ** max(0, math.floor(math.log2(n)) - frac_bits))
    return -(-n // step) * step

  return round_up


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--first", type=int, default=16)
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  c = greedy.get_config()
  if a.quick:
    first, n = 0, 4
    cfg, params, tok = None, None, bm.WordTokenizer(257)  # no forward pass is run
  else:
    first, n = a.first, 34
    cfg, params, tok = lm.load_smollm2()
  ds = train.make_dialogues(c, n_dialogues=n)
  order = [(s, i) for i in range(first, n) for s in c.seeds]
  G = c.group_dialogues
  groups = []
  for j in range(0, len(order), G):
    rows, keys = [], []
    for g, (s, i) in enumerate(order[j : j + G]):
      r, where = train._dialogue_rows(ds[s][i], tok, c)
      rows += r
      keys += [((g, col), qi) for qi, _, col in where]
    groups.append((rows, keys))

  shapes: list = []

  def record(params, tree, *, config, max_targets):  # no forward: shapes only
    del params, config, max_targets
    shapes.append(tuple(tuple(np.shape(x)) for x in tree.ids))
    return np.zeros(tree.n_rows, np.float32)

  real_forward, real_round = _prefix.tree_logprobs, _prefix._round_up
  _prefix.tree_logprobs = record
  trees = {}
  try:
    for name, rnd in (
      ("multiples_of_8", real_round),
      ("ladder_half", _ladder(1)),
      ("ladder_quarter", _ladder(2)),
    ):
      _prefix._round_up = rnd
      shapes.clear()
      padded = real = 0
      for rows, keys in groups:
        _, st = _prefix.score_rows_shared(
          params, rows, keys, config=cfg, max_targets=c.max_targets, buckets=c.buckets
        )
        padded += st["padded_tokens"]
        real += st["real_tokens"]
      trees[name] = dict(
        trees=len(shapes),
        distinct_shapes=len(set(shapes)),
        padded_tokens=padded,
        real_tokens=real,
        shapes=sorted({str(s) for s in shapes}),
      )
  finally:
    _prefix.tree_logprobs, _prefix._round_up = real_forward, real_round

  lengths = {2: [], 3: []}
  for s, i in order:
    d = ds[s][i]
    for q in d.queries:
      for k in (2, 3):
        for sub in itertools.combinations(range(len(d.turns)), k):
          _, attn, _ = bm.encode_rows(tok, [[d.turns[t] for t in sub]], q.x, q.y, max_len=256)
          lengths[k].append(int(attn.sum()))
  rows_padding = {}
  for buckets in (tuple(c.buckets), (56, 64, 72, 80, 88, 96, 104, 112, 128, 160)):
    for k, ls in lengths.items():
      ls = np.asarray(ls)
      padded = np.asarray([next(b for b in buckets if b >= x) for x in ls])
      rows_padding[f"{k}_turns@{buckets}"] = dict(
        mean_real=float(ls.mean()), padded_over_real=float(padded.sum() / ls.sum())
      )
  rows = [
    dict(case=f"trees {name}", groups=len(groups), tokenizer="word" if a.quick else "SmolLM2", **t)
    for name, t in trees.items()
  ]
  rows += [dict(case=f"greedy rows {k}", **v) for k, v in rows_padding.items()]
  bench.write(NAME, a, rows=rows, summary=[], host=host, argv=argv)


if __name__ == "__main__":
  main()
