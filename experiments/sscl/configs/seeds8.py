"""The default setting on 8 seeds: the run that decides the fine-tuning claims.

  python -m experiments.sscl.main --config=experiments/sscl/configs/seeds8.py \
      --workdir=runs/sscl_seeds8

The project's protocol takes 8 seeds where an effect is small (the CISC intervals over the 3
default seeds were too wide). Everything else, claims and rules included, is ``default.py``'s;
seeds 0..7, so the first three are the default run's. Only the claims' notes change: they name
a t-interval over 8 seeds.
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
