"""Paper-scale setting for an accelerator host (not run in CI or on CPU; not run
by us).

  python -m experiments.soda.main --config=experiments/soda/configs/full.py \
      --config.lm.data_dir=/path/to/fineweb10B --workdir=runs/soda_full

The horizon study on a GPT-2-small-sized LM (12 layers, d = 768, context 1024,
vocabulary 50304) over FineWeb token shards in ``lm.data_dir`` (the reference
run's layout, ``jaxpapers.soda.read_token_shard``), batch 64 x 1024 tokens,
horizons 510 / 1600 / 5100 steps, 2 seeds. Checkpoints every 1000 steps inside a
run; ``data_parallel = 0`` splits each run's batch over the devices a small grid
leaves idle (``jaxpapers.soda.grid_mesh``); ``microbatches = 16`` accumulates
the gradient over slices of 4 sequences. Memory per device, estimated (not
measured): about 5.9 GB of optimizer state per run of the AdamW group (163M
parameters, AdamW and SODA(AdamW) states) plus about 2 GB of activations per
sequence: about 55 GB for the 30-run AdamW grid on 8 devices; shrink the grids
(``--config.lm.adamw_lrs='(1.8e-3,)'``) or raise ``lm.microbatches`` to fit.
Expected cost: about 2e19 FLOPs for the whole grid (GPU-days).
"""

from experiments.soda.configs import default

WHAT = "GPT-2-small LM on FineWeb, val bits/token"


def get_config():
  config = default.get_config()
  config.digits.enabled = False
  lm = config.lm
  lm.update(  # the fields the default's lm task sets otherwise
    dict(
      enabled=True,
      data_dir="",  # required: set --config.lm.data_dir
      d_model=768,
      num_layers=12,
      num_heads=12,
      context=1024,
      batch_size=64,
      horizons=(510, 1600, 5100),
      num_seeds=2,
      adamw_lrs=(6e-4, 1.8e-3, 5e-3),
      adamw_wds=(0.0, 0.01, 0.1, 1.0),
      soda_adamw_lrs=(6e-4, 1.8e-3, 5e-3),
      muon_lrs=(0.01, 0.02, 0.05),
      muon_adam_lr=3.6e-3,
      muon_wds=(0.0, 0.01, 0.1, 1.0),
      soda_muon_lrs=(0.01, 0.02, 0.05),
      b2=0.95,
      cooldown_frac=0.28,
      val_windows=512,
      chunk=10,  # divides every horizon
      # an orbax checkpoint every 1000 steps inside each run
      checkpoint_every=100,
      # split the batch over the devices a small grid leaves idle
      data_parallel=0,
      microbatches=16,  # 4 sequences per accumulated slice
      eval_batch=8,  # validation windows per chunk (512 windows: 64 chunks)
    )
  )
  # The default config's claims, re-declared for the LM (bits per token, lower
  # is better).
  config.claims = tuple(
    c
    for base, name in (("adamw", "AdamW"), ("muon", "Muon"))
    for c in (
      default._wd_moves("lm", base, name, WHAT, lm, span="10x"),
      default._match_or_beat(
        "lm", base, name, WHAT, lm, trivial="unigram predictor, val bits/token"
      ),
    )
  )
  return config
