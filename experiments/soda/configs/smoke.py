"""Smoke setting of the SODA experiment: seconds; used by tests and the
notebook.

python -m experiments.soda.main --config=experiments/soda/configs/smoke.py
--workdir=/tmp/soda_smoke
"""

from experiments.soda.configs import default


def get_config():
  config = default.get_config()
  config.digits.update(
    dict(
      horizons=(60,),
      num_seeds=1,
      adamw_lrs=(3e-3,),
      adamw_wds=(0.0, 1.0),
      soda_adamw_lrs=(3e-3,),
      muon_lrs=(),  # Muon arms are covered by the unit tests
      soda_muon_lrs=(),
      hidden=32,
      chunk=60,
    )
  )
  config.lm.update(
    dict(
      enabled=True,
      horizons=(20,),
      num_seeds=1,
      d_model=16,
      num_layers=1,
      context=16,
      batch_size=4,
      adamw_lrs=(3e-3,),
      adamw_wds=(0.0, 1.0),
      soda_adamw_lrs=(3e-3,),
      muon_lrs=(),
      muon_wds=(0.0,),
      soda_muon_lrs=(),
      val_windows=8,
      chunk=20,
    )
  )
  # claims inherited from default.py; a smoke run judges none
  config.issue_verdicts = False
  return config
