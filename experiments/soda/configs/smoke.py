"""Smoke setting of the SODA experiment: seconds; used by tests and the notebook.

python -m experiments.soda.main --config=experiments/soda/configs/smoke.py --workdir=/tmp/soda_smoke
"""

from experiments.soda.configs import default


def get_config():
  config = default.get_config()
  d = config.digits
  d.horizons = (60,)
  d.num_seeds = 1
  d.adamw_lrs = (3e-3,)
  d.adamw_wds = (0.0, 1.0)
  d.soda_adamw_lrs = (3e-3,)
  d.soda_zero_lrs = (3e-3,)
  d.muon_lrs = ()  # Muon arms are covered by the unit tests
  d.soda_muon_lrs = ()
  d.hidden = 32
  d.chunk = 60
  lm = config.lm
  lm.enabled = True
  lm.horizons = (20,)
  lm.num_seeds = 1
  lm.d_model, lm.num_layers, lm.num_heads, lm.context = 16, 1, 2, 16
  lm.batch_size = 4
  lm.adamw_lrs = (3e-3,)
  lm.adamw_wds = (0.0, 1.0)
  lm.soda_adamw_lrs = (3e-3,)
  lm.muon_lrs = ()
  lm.muon_wds = (0.0,)
  lm.soda_muon_lrs = ()
  lm.val_windows = 8
  lm.chunk = 20
  config.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return config
