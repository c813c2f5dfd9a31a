"""Pilot (judges nothing): one seed, keep-only fine-tuning, to see why it leaves the readout.

  python -m experiments.sscl.main --config=experiments/sscl/configs/pilot.py \
    --workdir=runs/sscl_pilot

The default setting with one seed and the keep-only arm alone. Its fine-tuning history records,
per chunk, the keep loss, the dense readout's drift from the frozen teacher's
(``dense_drift``) and the spread of its patches around their image mean (``dense_spread``, 0
for a constant readout). It debugs the fine-tuning recipe; it picks no threshold and no seed.
"""

from experiments.sscl.configs import default


def get_config():
  c = default.get_config()
  c.seeds = 1
  c.arms = ("keep_only",)
  c.issue_verdicts = False
  return c
