"""Seconds-long smoke setting (tests, notebook, reproduce --quick): tiny models,
few steps."""

from experiments.dual_rate.configs import default


def get_config():
  c = default.get_config()
  # the shapes of the unit tests' tiny models (tests/dual_rate/_util.py), so
  # that the eager parameter initialisers compiled there are reused here
  c.update(
    dict(
      patch_size=4,
      encoder_width=16,
      encoder_depth=1,
      num_heads=2,
      mlp_ratio=2,
      feature_dim=8,
      denoiser_width=8,
      denoiser_blocks=1,
      context_channels=4,
      denoiser_emb_dim=8,
    )
  )
  c.train_seeds = (0,)
  c.update(
    dict(
      train_steps=10,
      batch_size=32,
      warmup_steps=5,
      checkpoint_every=0,
      classifier_steps=10,
      num_eval_samples=64,
      # the held-out reference path of configs/heldout.py (needs 128)
      fd_reference="heldout",
      eval_seeds=(0,),
      baseline_steps=(4,),
      dual_steps=(4,),
      dual_intervals=(1, 2),
      time_repeats=1,
      time_methods=("dual-rate",),
    )
  )
  # no MMD training: its step is the experiment's largest program (unit tests
  # check the losses)
  c.update(
    dict(mmd_steps=(), mmd_dual_steps=(), mmd_train_steps=3, grid_samples=8)
  )
  # controls: only those that reuse compiled programs (the refresh kinds share
  # the sampler)
  c.update(
    dict(control_no_features=False, control_fresh_only=False, heun_steps=())
  )
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
