"""Seconds-scale smoke run (tests, notebook, `reproduce --quick`): the whole toy
track on a tiny decoder (`ffn_dim = d_model` shares weight shapes, so fewer
programs compile).
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.tracks = ("toy",)
  c.toy.update(d_model=32, n_layers=2, ffn_dim=32, steps=20, checkpoint_every=0)
  c.toy.update(num_detect=8, num_eval=16, ks=(1, 2), num_random=1)
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
