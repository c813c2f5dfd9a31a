"""Seconds-long smoke setting (tests, notebook, reproduce --quick): tiny models, few steps."""

from experiments.dual_rate.configs import default


def get_config():
  c = default.get_config()
  # The shapes of the unit tests' tiny models (tests/dual_rate/_util.py), so that the eager
  # parameter initialisers compiled there are reused here.
  c.patch_size = 4
  c.encoder_width = 16
  c.encoder_depth = 1
  c.num_heads = 2
  c.mlp_ratio = 2
  c.feature_dim = 8
  c.denoiser_width = 8
  c.denoiser_blocks = 1
  c.context_channels = 4
  c.denoiser_emb_dim = 8
  c.train_seeds = (0,)  # the training-seed cell path of configs/seeds.py, one seed,
  c.phase_cells = True  # one cell per phase as in configs/quality.py
  c.train_steps = 10
  c.batch_size = 32
  c.warmup_steps = 5
  c.checkpoint_every = 0
  c.classifier_steps = 10
  c.num_eval_samples = 64
  c.fd_reference = "heldout"  # the held-out reference path of configs/heldout.py (needs 128)
  c.eval_seeds = (0,)
  c.baseline_steps = (4,)
  c.dual_steps = (4,)
  c.dual_intervals = (1, 2)
  c.time_repeats = 1
  c.time_methods = ("dual-rate",)
  # No MMD training here: its step is the largest program of the experiment (a third of the
  # smoke run's compile time). The MMD losses are checked by unit tests (student-loss sign,
  # the teacher as an argument of the jitted step) and, with -m slow, the gradient separation.
  c.mmd_steps = ()
  c.mmd_dual_steps = ()
  c.mmd_train_steps = 3
  c.grid_samples = 8
  # Controls: only those that reuse compiled programs (the refresh kinds share the sampler).
  c.control_no_features = False
  c.control_fresh_only = False
  c.heun_steps = ()
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
