"""The default setting on 8 seeds: the run that decides the fine-tuning claims.

  python -m experiments.sscl.main --config=experiments/sscl/configs/seeds8.py \
      --workdir=runs/sscl_seeds8

Why it exists: on the 3 seeds of ``configs/default.py`` the CISC claims went the paper's way on
every seed, but their t-intervals over 3 seeds were too wide to clear or miss the bars, so the
claims were inconclusive. The project's protocol fixes the number of seeds: at least 3, and 8
where the effect is small. This config applies that rule; the seed count is the protocol's, not
chosen from the measured numbers.

Everything but the number of seeds is ``configs/default.py``'s: the data, the model, the
fine-tuning arms and the same claims with the same rules, thresholds, preconditions, controls
and chance levels. Seeds 0..7 (``seeds = 8``, base seed 0), so the first three are the default
run's. The only change to the claims is the note naming the interval (a t-interval over 8
seeds, not 3).
"""

from experiments.sscl.configs import default

SEEDS = 8
if not default.T_CI.endswith("over the 3 seeds"):
  raise ValueError(f"default.T_CI should end with 'over the 3 seeds', got {default.T_CI!r}")
T_CI = default.T_CI.removesuffix("3 seeds") + f"{SEEDS} seeds"


def _with_seed_count(claim: dict) -> dict:
  """``claim`` with its note naming the interval over :data:`SEEDS` seeds."""
  note = claim.get("note", "")
  if not note.endswith(default.T_CI):
    raise ValueError(
      f"claim {claim.get('id')!r}: expected its note to end with default.T_CI "
      f"({default.T_CI!r}), got {note!r}"
    )
  return {**claim, "note": note[: -len(default.T_CI)] + T_CI}


CLAIMS = tuple(_with_seed_count(c) for c in default.CLAIMS)


def get_config():
  c = default.get_config()
  c.seeds = SEEDS
  c.claims = CLAIMS
  return c
