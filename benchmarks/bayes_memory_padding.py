"""Padded LM tokens of the bayes_memory experiment: per-dialogue batches vs
shared batches.

  python -m benchmarks.bayes_memory_padding [--quick] [--tiny]

The LM cost of the experiment is one forward per padded token, so the
padded-token count is its cost model (measured wall times on the shared machine
are too noisy to compare). Counts the rows of the default config's first 12
dialogues of seed 0 (host-side: tokenisation and bucketing only, no forward
pass) under (a) the first run's scheme: buckets (48, 64, 96, 128, 160), each
dialogue its own batches; (b) the current one: buckets (56, 80, 128, 160), the
rows of 6 dialogues sharing their batches. ``--tiny`` (implied by ``--quick``)
tokenises with a word tokenizer instead of SmolLM2's (no model load).

The rows come from the library's row builder (``bm.dialogue_rows``) and are
counted by its bucketed scorer (``bm.score_rows_bucketed``, with a stand-in
forward), the functions the experiment scores with.
"""

from __future__ import annotations

import numpy as np

from benchmarks._setup import bayes_memory_dialogues, experiment_config
from jaxpapers import bayes_memory as bm
from jaxpapers import lm
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_padding"


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument(
    "--tiny", action="store_true", help=("WordTokenizer instead of SmolLM2's")
  )
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  tiny = a.tiny or a.quick
  c = experiment_config("bayes_memory", "default")
  tok = bm.WordTokenizer(257) if tiny else lm.load_smollm2()[2]
  ds = bayes_memory_dialogues(c, 0, n_dialogues=12)
  old_buckets = (48, 64, 96, 128, 160)

  # padded tokens of the bucketed scorer, without running the LM
  def count(rows, buckets):
    fn = lambda ids, *_: np.zeros(len(ids))
    return bm.score_rows_bucketed(
      fn, rows, buckets=buckets, batch_tokens=c.batch_tokens
    )[1]

  rows = [bm.dialogue_rows(d, tok, max_len=max(c.buckets))[0] for d in ds]
  real = sum(int(r[1].sum()) for rr in rows for r in rr)
  per_dialogue = sum(count(rr, old_buckets) for rr in rows)
  g = c.group_dialogues
  grouped = sum(
    count(sum(rows[i : i + g], []), c.buckets) for i in range(0, len(rows), g)
  )
  record = dict(
    case="padded_tokens",
    tokenizer="word (tiny)" if tiny else "SmolLM2",
    dialogues=len(ds),
    rows=sum(len(rr) for rr in rows),
    real_tokens=real,
    padded_per_dialogue_old_buckets=per_dialogue,
    padded_grouped_new_buckets=grouped,
  )
  summary = [
    bench.summary(
      (
        "padded tokens: per-dialogue batches, old buckets / shared batches, "
        "new buckets"
      ),
      per_dialogue / grouped,
      ">= 1",
      note=(
        f"{record['tokenizer']} tokenizer; the LM's cost is one forward per "
        "padded token"
      ),
    )
  ]
  bench.write(NAME, a, rows=[record], summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
