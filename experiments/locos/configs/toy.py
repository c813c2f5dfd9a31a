"""The toy track alone (synthetic literal / non-literal retrieval; about 15 min on 2 busy cores).

  python -m experiments.locos.main --config=experiments/locos/configs/toy.py --workdir=runs/locos_toy

A 3-layer, 4-query-head / 2-KV-head decoder (d = 64) trained 2,000 steps on the synthetic
task of `jaxpapers.locos.ToyTask`, then LOCOS vs the attention detectors and mean-query
ablation curves on non-literal, literal and parametric probes.
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.tracks = ("toy",)
  c.claims = default.TOY_CLAIMS
  return c
