"""The quality regime judged against held-out data: a floor that is a floor.

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/heldout.py \
      --workdir=runs/dual_rate_heldout

Fixed before the run: every row and the floor against held-out images
(`fd_reference = "heldout"`: two disjoint held-out splits of N = 500; the
train-reference FD kept beside), the matched-quality rule of `default.py`
re-decided with the floor held out as a precondition, the quality run's training
(6000 steps) and sampler grid, the rollout and DDIM couplings trained as long;
training seed 0, one cell per phase, the main claim's networks first.
"""

from experiments.dual_rate.configs import default, quality


def get_config():
  c = quality.regime(default.get_config())
  c.train_seeds = (0,)
  c.num_eval_samples = 500  # two disjoint held-out splits of the samples' size
  c.fd_reference = "heldout"
  # controls: the couplings only (after the main cell)
  c.control_no_features = False
  c.control_fresh_only = False
  c.control_couplings = ("rollout", "ddim")
  c.mmd_steps = ()
  c.mmd_dual_steps = ()
  c.claims = CLAIMS
  return c


def _matched_quality():
  (claim,) = [
    c for c in default.CLAIMS if c["id"] == "matched_quality_less_compute"
  ]
  claim = dict(claim)
  claim["requires"] = [
    dict(
      metric="derived.floor_is_heldout",
      op=">=",
      value=1.0,
      why=(
        "the floor is the FD between two disjoint held-out splits of the "
        "samples' size and every row is measured against the first of them, "
        "so the floor bounds what real data scores"
      ),
    ),
    *claim["requires"],
  ]
  claim["baselines"] = {
    "best baseline FD (held-out ref.)": "headline.baseline_best.fd_mean",
    "held-out floor FD": "floor.fd",
    "best baseline FD (train ref.)": "headline.baseline_best.fd_train_mean",
    "train-reference floor FD": "floor.fd_train_reference",
  }
  return claim


CLAIMS = (
  _matched_quality(),
  *(c for c in default.CLAIMS if c["id"] == "front_loaded_refresh"),
)
