"""PANDA ablations at the default run's budget: the four small sets, every
backbone.

  python -m experiments.panda.main --config=experiments/panda/configs/ablations.py \\
      --workdir=runs/panda_ablations --config.data_dir=../shared/data \\
      '--config.merge_cells_from=("experiments/panda/results", "experiments/panda/results/ablations")'

The default config's rules unchanged, so its committed vanilla and PANDA cells
are reused. Four arms remove one part of PANDA each (``panda.ABLATIONS``):
``without_gate`` (the prior/attention mixture fixed at 1/2), ``without_aux``
(the reference's WithoutAux), ``without_prior_aux`` (attention only,
WithoutPriorAux) and ``prior_only`` (the vanilla operator inside the layer).
Each claim, fixed before the run: the mean over pairs of PANDA - ablation with
the 95% half-width 1.96 std / sqrt(pairs) lies above 0 (held), below 0 (not
reproduced) or contains 0.
"""

from experiments.panda.configs import default


def get_config():
  c = default.get_config()
  c.datasets = ("texas", "cornell", "email-Enron", "telegram")
  c.arms = (
    "vanilla",
    "panda",
    "without_gate",
    "without_aux",
    "without_prior_aux",
    "prior_only",
  )
  c.claims = tuple(_claim(arm, what) for arm, what in _PARTS)
  return c


_PARTS = (
  ("without_gate", "the learned prior/attention gate"),
  ("without_aux", "the auxiliary path"),
  (
    "without_prior_aux",
    "the prior mixture and the auxiliary path (attention only)",
  ),
  ("prior_only", "the attention and the auxiliary path (prior only)"),
)


def _claim(arm, what):
  return dict(
    id=f"needs_{arm.removeprefix('without_')}",
    statement=f"removing {what} lowers PANDA's test accuracy",
    paper_text="ablations in the official code (WithoutAux, WithoutPriorAux)",
    metric=f"derived.ablations.{arm}.panda_minus_ablation_pp",
    noise=f"derived.ablations.{arm}.ci95_pp",
    direction="higher",
    held=0.0,
    unit="pp",
    fmt="+.2f",
    note=(
      "mean over (dataset, backbone) pairs of PANDA - ablation on Texas, "
      "Cornell, email-Enron and Telegram; noise = 95% CI half-width 1.96 x "
      "std / sqrt(pairs); held when the whole interval is above 0"
    ),
  )
