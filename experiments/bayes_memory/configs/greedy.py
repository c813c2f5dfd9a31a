"""Greedy Bayes-factor turn sets on the real SmolLM2-135M-Instruct (a CPU-sized
subset).

  python -m experiments.bayes_memory.main --config=experiments/bayes_memory/configs/greedy.py \
      --workdir=runs/bayes_memory_greedy

The default setting on the first 16 dialogues of data seeds 0-2 (96 questions;
the committed 204-question run adds ``--config.n_dialogues=34
--config.scoring=shared``) with greedy sets of up to 3 turns, added while the
conditional log Bayes factor is > 0 (``bm.greedy_select``). A run stopped at a
deadline is analysed with ``--config.score_missing=False`` (the dialogues scored
for every seed, in a fixed order). The greedy set uses the reference response
(an upper bound, like the top-1 oracle); the claims, written before the run,
compare it with the top-1 oracle, the distilled selector (trained
leave-one-seed-out on this subset) and recency.
"""

from experiments.bayes_memory.configs import default
from experiments.bayes_memory.configs.default import claim


def get_config():
  c = default.get_config()
  # the dialogues of the first default runs (its committed results)
  c.seeds = (0, 1, 2)
  c.n_dialogues = 16
  c.greedy_k = 3
  c.claims = GREEDY_CLAIMS
  return c


_RULE = (
  "two-way forced-choice accuracy on preference questions; "
  "95% paired bootstrap interval over questions; "
  "held if the whole interval is > 0, inconclusive (a tie) if it straddles 0, "
  "not reproduced if it lies below 0"
)


def _greedy(other, statement, paper_text, note, baselines):
  """oracle_bf_greedy against ``other``: the greedy set is scored against the
  reference y."""
  metric = f"acc_gain_greedy_vs_{other}"
  return claim(
    f"greedy_beats_{other}",
    statement,
    paper_text,
    metric,
    0.0,
    note + _RULE,
    oracle=True,
    baselines=baselines,
  )


GREEDY_CLAIMS = (
  _greedy(
    "top1",
    (
      "A turn set chosen greedily by conditional Bayes factor answers "
      "preference questions better than the single turn with the largest "
      "Bayes factor"
    ),
    (
      "the Bayes factor decides which turns to include (abstract; "
      "the set rule is a reconstruction)"
    ),
    "accuracy of oracle_bf_greedy (k <= 3, tau = 0) minus oracle_bf (top-1); ",
    {
      "no memory": "derived.accuracy.no_memory",
      "all memory": "derived.accuracy.all_memory",
      "top-1 Bayes factor": "derived.accuracy.oracle_bf",
    },
  ),
  _greedy(
    "distilled",
    (
      "The greedy Bayes-factor set answers better than the distilled top-1 "
      "selector"
    ),
    "the model learns to identify salient turns (abstract)",
    "accuracy of oracle_bf_greedy minus the distilled top-1 selector (trained "
    "leave-one-seed-out on this subset); ",
    {"distilled": "derived.accuracy.distilled"},
  ),
  _greedy(
    "recency",
    "The greedy Bayes-factor set answers better than the most recent turn",
    "outperforms existing retrieval on preference-intensive tasks (abstract)",
    (
      "accuracy of oracle_bf_greedy minus the most recent turn (the strongest "
      "retriever of the default run); "
    ),
    {"recency": "derived.accuracy.recency"},
  ),
)
