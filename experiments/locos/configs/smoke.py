"""Seconds-scale smoke run (tests, notebook, `reproduce --quick`): the whole toy track on a
tiny decoder (`ffn_dim = d_model` shares weight shapes, so fewer programs compile).
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.tracks = ("toy",)
  c.toy.d_model = 32
  c.toy.n_layers = 2
  c.toy.ffn_dim = 32
  c.toy.steps = 20
  c.toy.checkpoint_every = 0
  c.toy.num_detect = 8
  c.toy.num_eval = 16
  c.toy.ks = (1, 2)
  c.toy.num_random = 1
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
