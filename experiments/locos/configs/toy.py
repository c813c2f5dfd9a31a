"""The toy track alone (synthetic literal / non-literal retrieval; about 15 min
on 2 busy cores).

python -m experiments.locos.main --config=experiments/locos/configs/toy.py
--workdir=runs/locos_toy
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.tracks = ("toy",)
  c.claims = default.TOY_CLAIMS
  return c
