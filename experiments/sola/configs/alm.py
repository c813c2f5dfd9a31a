"""SOLA against the ALM-style chunk loss and the direct baselines (CPU, 100
steps, 3 seeds).

  python -m experiments.sola.main --config=experiments/sola/configs/alm.py --workdir=runs/sola_alm

The default setting (teacher SmolLM2-135M-Instruct, 2-layer d = 128 students
with the 1k-token BPE, the same text, batch, seeds and 24 distilled aligned
pairs per window per step) at the ablations run's budget of 100 steps, with five
methods: CE only, ULD, MinED-style KL, the ALM-style chunk likelihood loss
(:func:`jaxpapers.sola.alm_chunk_loss`: binarised KL between teacher and student
likelihoods of each selected MCC block, the block likelihood the product of its
realised tokens' probabilities) and SOLA. Every distillation loss is applied to
the same randomly selected MCC blocks (SOLA, ULD and MinED at the block's
aligned prediction pair, ALM on the whole block), with weight 1 next to the
student's own cross-entropy.

The claims and their rules are fixed here before the run.
"""

from experiments.sola.configs import default


def get_config():
  c = default.get_config()
  c.methods = ("ce", "uld", "mined", "alm", "sola")
  c.steps = 100
  c.claims = CLAIMS
  return c


CLAIMS = (
  default.sola_claim(
    "sola_beats_alm",
    "alm",
    (
      "SOLA gives lower held-out student bits per byte than the ALM-style "
      "chunk likelihood loss at matched budgets"
    ),
    (
      "text-space matching compresses the teacher signal into chunk-level "
      "events ... "
    )
    + default.CTKD_TEXT,
    "SOLA's seed-mean BPB minus the ALM-style loss's",
  ),
  default.sola_claim(
    "sola_beats_ctkd_baselines",
    "best_ctkd",
    (
      "SOLA gives lower held-out student bits per byte than each of the ULD, "
      "MinED-style and ALM-style cross-tokenizer baselines at matched budgets "
      "(100 steps)"
    ),
    default.CTKD_TEXT,
    "SOLA's seed-mean BPB minus the best of ULD, MinED-style and ALM-style",
  ),
  default.sola_claim(
    "sola_beats_ce_only",
    "ce",
    (
      "SOLA gives lower held-out bits per byte than the student trained "
      "without a teacher (CE only), at 100 steps"
    ),
    default.CE_TEXT,
    "SOLA's seed-mean BPB minus CE-only's",
  ),
)
