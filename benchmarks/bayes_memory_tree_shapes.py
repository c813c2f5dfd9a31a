"""Recompilations and padding of shared-prompt scoring on the greedy run's
groups (host only).

  python -m benchmarks.bayes_memory_tree_shapes [--quick]

No forward pass: builds, for the scoring groups of the 204-question greedy run
that were scored with shared-prompt scoring (dialogues 16-33 of seeds 0-2, 6 per
group, dialogue-major), the prefix trees of ``bm.score_rows_shared`` and counts
their distinct level shapes (one compilation of the tree forward each) and their
padded tokens (the forward's cost), with the level sizes rounded as now
(multiples of 8) or to a geometric ladder (steps of a half or a quarter of the
power of two below the size). Also counts the padding of the greedy steps' rows
(every 2- and 3-turn subset of each question, y) in the configured row buckets
and in finer ones. ``--quick``: 4 dialogues per seed from dialogue 0, with a
word tokenizer (no model load).

A what-if study on the public functions: it groups the rows by length bucket as
``bm.score_rows_shared`` does, builds each bucket's tree with
``bm.build_prefix_tree`` unpadded (``row_multiple = len_multiple = 1``: the
exact level sizes) and rounds those sizes by each rule, which gives the shapes
and padding the padded trees would have. Rows come from ``bm.dialogue_rows``. It
has no target, so its record has no summary entries.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from benchmarks._setup import bayes_memory_dialogues, experiment_config
from jaxpapers import bayes_memory as bm
from jaxpapers import lm
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_tree_shapes"


def multiples_of(n: int, m: int) -> int:
  """The library's level padding: the next multiple of m (at least m)."""
  return max(m, -(-n // m) * m)


def _ladder(frac_bits):
  def round_up(n, m):
    n = max(n, m)
    step = max(m, 2 ** max(0, math.floor(math.log2(n)) - frac_bits))
    return -(-n // step) * step

  return round_up


def exact_trees(rows, keys, buckets):
  """Unpadded prefix trees of ``rows``, one per length bucket, grouped as in
  ``bm.score_rows_shared`` (level-0 groups stay whole, in the bucket of their
  longest row)."""
  bounds = sorted(buckets)
  top: dict = {}
  for r in range(len(rows)):
    top.setdefault(tuple(keys[r])[:1], []).append(r)
  groups: dict = {}
  for members in top.values():
    n = max(int(np.asarray(rows[r][1]).sum()) for r in members)
    groups.setdefault(next(b for b in bounds if b >= n), []).extend(members)
  return [
    bm.build_prefix_tree(
      [rows[i] for i in idx],
      [keys[i] for i in idx],
      row_multiple=1,
      len_multiple=1,
    )
    for _, idx in sorted(groups.items())
  ]


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--first", type=int, default=16)
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  c = experiment_config("bayes_memory", "greedy")
  if a.quick:
    first, n = 0, 4
    tok = bm.WordTokenizer(257)  # no forward pass is run
  else:
    first, n = a.first, 34
    tok = lm.load_smollm2()[2]
  ds = {s: bayes_memory_dialogues(c, s, n) for s in c.seeds}
  order = [(s, i) for i in range(first, n) for s in c.seeds]
  G = c.group_dialogues
  trees_of_groups = []
  for j in range(0, len(order), G):
    rows, keys = [], []
    for g, (s, i) in enumerate(order[j : j + G]):
      r, where = bm.dialogue_rows(ds[s][i], tok, max_len=max(c.buckets))
      rows += r
      keys += [((g, col), qi) for qi, _, col in where]
    trees_of_groups.append(exact_trees(rows, keys, c.buckets))
  # Exact (unpadded) level sizes of every tree: [(rows, segment length)] per
  # level.
  exact = [[np.shape(x) for x in t.ids] for ts in trees_of_groups for t in ts]
  real = sum(t.real_tokens for ts in trees_of_groups for t in ts)
  trees = {}
  for name, rnd in (
    ("multiples_of_8", multiples_of),
    ("ladder_half", _ladder(1)),
    ("ladder_quarter", _ladder(2)),
  ):
    shapes = [
      tuple((rnd(N, 8), rnd(L, 8)) for N, L in levels) for levels in exact
    ]
    trees[name] = dict(
      trees=len(shapes),
      distinct_shapes=len(set(shapes)),
      padded_tokens=sum(N * L for levels in shapes for N, L in levels),
      real_tokens=real,
      shapes=sorted({str(s) for s in shapes}),
    )

  lengths = {2: [], 3: []}
  for s, i in order:
    d = ds[s][i]
    for q in d.queries:
      for k in (2, 3):
        for sub in itertools.combinations(range(len(d.turns)), k):
          _, attn, _ = bm.encode_rows(
            tok, [[d.turns[t] for t in sub]], q.x, q.y, max_len=256
          )
          lengths[k].append(int(attn.sum()))
  rows_padding = {}
  for buckets in (
    tuple(c.buckets),
    (56, 64, 72, 80, 88, 96, 104, 112, 128, 160),
  ):
    for k, ls in lengths.items():
      ls = np.asarray(ls)
      padded = np.asarray([next(b for b in buckets if b >= x) for x in ls])
      rows_padding[f"{k}_turns@{buckets}"] = dict(
        mean_real=float(ls.mean()),
        padded_over_real=float(padded.sum() / ls.sum()),
      )
  rows = [
    dict(
      case=f"trees {name}",
      groups=len(trees_of_groups),
      tokenizer="word" if a.quick else "SmolLM2",
      **t,
    )
    for name, t in trees.items()
  ]
  rows += [dict(case=f"greedy rows {k}", **v) for k, v in rows_padding.items()]
  bench.write(NAME, a, rows=rows, summary=[], host=host, argv=argv)


if __name__ == "__main__":
  main()
