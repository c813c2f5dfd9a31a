"""Paper-scale setting for a GPU/TPU host (not run in CI or on CPU).

  python -m experiments.soda.main --config=experiments/soda/configs/full.py \
      --config.lm.text_path=/data/fineweb_sample.txt --workdir=runs/soda_full

What it runs: the same comparison as the default config at GPT-2-small width
(12 layers, d = 768, 12 heads, context 1024, byte-level vocabulary), batch 64,
horizons 5k/20k/80k steps, 2 seeds, AdamW and Muon weight-decay grids against
SODA(AdamW) and SODA(Muon) with the embedding and head on unwrapped AdamW (as
in the reference Muon run). ``lm.text_path`` must point to a large UTF-8 text
file supplied by the user (e.g. a FineWeb sample); with the default
``pydoc_data`` text (465k characters) a model of this size overfits. The
paper's own run (GPT-2 small on FineWeb GPT-2 tokens, 5100 steps at
8x64x1024 tokens per step) also needs a token-level data loader, which this
experiment does not include.

Expected hardware: one 80 GB GPU or a TPU v4-8 or larger; runs of one optimizer
group are vmapped and sharded over all devices (``core.Sweep``), with an orbax
checkpoint every 2000 steps, so a preempted cell resumes from there. Lower
``lm.batch_size`` or split the grid over several invocations if memory is short. Expected cost: about 1e19 FLOPs for the whole
grid (several GPU-days). The digits task is disabled.
"""

from experiments.soda.configs import default


def get_config():
  config = default.get_config()
  config.digits.enabled = False
  lm = config.lm
  lm.d_model, lm.num_layers, lm.num_heads, lm.context = 768, 12, 12, 1024
  lm.batch_size = 64
  lm.horizons = (5000, 20000, 80000)
  lm.num_seeds = 2
  lm.adamw_lrs = (6e-4, 1.8e-3)
  lm.adamw_wds = (0.0, 0.01, 0.1, 1.0)
  lm.soda_adamw_lrs = (1.8e-3, 5e-3)
  lm.muon_lrs = (0.02,)
  lm.muon_adam_lr = 3.6e-3
  lm.muon_wds = (0.0, 0.01, 0.1, 1.0)
  lm.soda_muon_lrs = (0.02, 0.05)
  lm.b1, lm.b2 = 0.9, 0.95
  lm.warmup_frac = 0.05
  lm.cooldown_frac = 0.28
  lm.val_windows = 512
  lm.chunk = 500
  lm.checkpoint_every = 4  # an orbax checkpoint every 2000 steps inside each cell
  return config
