"""Paper-scale setting for an accelerator host (not run in CI or on CPU).

  python -m experiments.soda.main --config=experiments/soda/configs/full.py \
      --config.lm.data_dir=/path/to/fineweb10B --workdir=runs/soda_full

What it runs: the horizon study of the default config on the paper's model and data: a
GPT-2-small-sized LM (12 layers, d = 768, 12 heads, context 1024, GPT-2 vocabulary padded to
50304) on FineWeb token shards read from ``lm.data_dir`` (``fineweb_train_*.bin`` /
``fineweb_val_*.bin`` in the reference run's shard layout: a 256-int32 header with magic
20240520, version 1 and the token count, then uint16 ids; see ``models.read_token_shard``),
batch 64 x 1024 tokens, horizons 510 / 1600 / 5100 steps (10x; the paper's run is 5100 steps),
AdamW and Muon over lr x wd grids against SODA(AdamW) and SODA(Muon) over lr only (embedding
and head unwrapped on AdamW, as in the reference Muon run), 2 seeds.

How it runs: every (horizon, optimizer group) is one ``core.Sweep`` grid whose runs are vmapped
and sharded over all devices of the host along the runs axis, with an orbax checkpoint every
1000 steps inside a run (``lm.chunk`` x ``lm.checkpoint_every``) and one finished-cell file per
grid, so a preempted job resumes where it stopped. ``lm.data_parallel = 0``: a grid with at most
half as many runs as devices splits each run's batch over the devices the runs would leave idle
(a ``runs x data`` mesh, parameters replicated on the data axis, gradients all-reduced;
``train.choose_data_parallel``), e.g. SODA(Muon) at one learning rate
(``--config.lm.soda_muon_lrs='(0.02,)'``: 2 runs, 4 devices each on 8) or any grid on a
multi-host slice; larger grids train whole runs per device (the smallest grid here, SODA(Muon)'s
3 lr x 2 seeds, on one 8-device host). ``lm.microbatches = 16`` accumulates each step's gradient over 16
slices of 4 sequences (the same update as the 64-sequence batch, a sixteenth of the
activations), and validation runs in chunks of ``lm.eval_batch`` windows. The train shards are
held on the device as uint16 (``lm.max_train_tokens`` caps them; 2.7e9 tokens are 5.4 GB).
Memory per device, estimated (not measured): ``ceil(R / devices)`` runs of optimizer state
(163M parameters with the untied head; about 36 bytes per parameter for the AdamW group, which
carries AdamW and SODA(AdamW) states per run: 5.9 GB per run) plus their activations of one
4 x 1024 microbatch (about 2 GB per sequence in float32 without rematerialisation): about 55 GB
for the 30-run AdamW grid on 8 devices; shrink the grids (e.g. ``--config.lm.adamw_lrs='(1.8e-3,)'``) or raise
``lm.microbatches`` to fit smaller devices. Expected cost: about 2e19 FLOPs for the whole grid
(GPU-days). Not run by us.
"""

from experiments.soda.configs import default

WHAT = "GPT-2-small LM on FineWeb, val bits/token"


def get_config():
  config = default.get_config()
  config.digits.enabled = False
  lm = config.lm
  lm.enabled = True
  lm.data_dir = ""  # required: set --config.lm.data_dir
  lm.vocab = 50304
  lm.max_train_tokens = 0
  lm.d_model, lm.num_layers, lm.num_heads, lm.context = 768, 12, 12, 1024
  lm.batch_size = 64
  lm.horizons = (510, 1600, 5100)
  lm.num_seeds = 2
  lm.adamw_lrs = (6e-4, 1.8e-3, 5e-3)
  lm.adamw_wds = (0.0, 0.01, 0.1, 1.0)
  lm.soda_adamw_lrs = (6e-4, 1.8e-3, 5e-3)
  lm.muon_lrs = (0.01, 0.02, 0.05)
  lm.muon_adam_lr = 3.6e-3
  lm.muon_wds = (0.0, 0.01, 0.1, 1.0)
  lm.soda_muon_lrs = (0.01, 0.02, 0.05)
  lm.b1, lm.b2 = 0.9, 0.95
  lm.warmup_frac = 0.05
  lm.cooldown_frac = 0.28
  lm.val_windows = 512
  lm.chunk = 10  # divides every horizon
  lm.checkpoint_every = 100  # an orbax checkpoint every 1000 steps inside each run
  lm.data_parallel = 0  # split the batch over the devices a small grid leaves idle
  lm.microbatches = 16  # 4 sequences per accumulated slice
  lm.eval_batch = 8  # validation windows per chunk (512 windows: 64 chunks)
  # The default config's claims, re-declared for the LM (bits per token, lower is better).
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
