"""Larger setting for a GPU/TPU host (not run in CI).

  python -m experiments.denseam.main --config=experiments/denseam/configs/full.py \
      --workdir=runs/denseam_full

K from 16 to 16,384 memories (1024x), 21 learning rates, 16 seeds, 2,000 steps,
T = 8, all three settings plus LSE with beta = 4 and the degree-10 polynomial.
Each (setting, K) grid of learning rates x seeds runs as one program sharded
over all devices (``core.Sweep``) and is checkpointed every 500 steps, so a
preempted cell resumes. Expect about an accelerator hour. Not measured here.
"""

from experiments.denseam.configs import default


def get_config():
  c = default.get_config()
  c.settings = (
    "lse:derived",
    "poly3:standard",
    "poly3:derived",
    "poly10:standard",
    "poly10:derived",
  )
  c.widths = (16, 64, 256, 1024, 4096, 16384)
  c.coord_widths = c.widths
  c.lrs = tuple(1e-3 * 2.0**i for i in range(-12, 9))
  c.steps = 2000
  c.seeds = 16
  c.batch_size = 128
  c.dyn_steps = 8
  c.dt = 0.25  # dt * T fixed at 2, as in the default (T = 4, dt = 0.5)
  c.chunk = 500
  # the same rules; preconditions on this width and lr grid
  c.claims = default.claims_for(c)
  return c
