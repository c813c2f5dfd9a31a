"""Cost pilot of the default run (judges no claim): the real SmolLM2 reader on a small world.

python -m experiments.lanr.main --config=experiments/lanr/configs/pilot.py --workdir=runs/lanr_pilot

Measures the seconds per LM-read context and the number of contexts the protocol reads per
question, to size the default run to the time budget. Its numbers choose no threshold, seed or
question count of a claim.
"""

from experiments.lanr.configs import default


def get_config():
  c = default.get_config()
  c.kb.n_people = 12
  c.n_train_per_hop = 8
  c.n_test_per_hop = 6
  c.seeds = 1
  c.n_boot = 500
  c.issue_verdicts = False
  return c
