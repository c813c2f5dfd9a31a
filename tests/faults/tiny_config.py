"""Config of the fault-injection binary (``tests/faults/tiny_experiment.py``):
seconds of work.

python -m tests.faults.tiny_experiment --config=tests/faults/tiny_config.py
--workdir=/tmp/tiny
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.name = "faults-tiny"
  c.seed = 0
  c.examples = 256
  c.features = 32
  c.classes = 3
  c.hidden = 64
  c.batch = 32
  c.learning_rate = 0.05
  c.steps = 24
  c.checkpoint_every = 3
  c.log_every = 1
  c.sweep_runs = 4
  c.sweep_steps = 12
  c.sweep_chunk = 2
  # A pause per step on the host (no effect on any number): it stretches the
  # training and sweep loops over about a second each, so that a kill at a
  # random time often lands inside them, between or during checkpoint saves,
  # history appends and cell writes.
  c.step_delay_s = 0.03
  c.issue_verdicts = False
  return c
