"""Paper-scale setting (accelerator hosts; never run in CI).

  python -m experiments.locos.main --config=experiments/locos/configs/full.py \
    --workdir=runs/locos_full --config.real.checkpoint_dir=/path/to/Qwen3-8B

The toy track at 5k steps, SmolLM2 on 1,000 probes with 1-4k-token contexts, and
the paper's model (Qwen3-8B) as the 'checkpoint' track from a Hugging Face
directory the user supplies (bfloat16: one 80 GB GPU), judged by the same rules.
Without `real.checkpoint_dir` the run stops before any track with an error
naming the flag.
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  t = c.toy
  t.update(
    num_names=16, num_landmarks=16, num_fillers=16, prompt_len=40, max_needles=4
  )
  t.update(d_model=128, n_layers=4, ffn_dim=256, steps=5000)
  t.update(num_detect=256, num_eval=512, ks=(1, 2, 4, 8, 12, 16), num_random=5)
  c.tracks = ("toy", "smollm2", "checkpoint")
  c.claims = (
    default.CLAIMS
    + default.TOY_CLAIMS
    + default.real_claims("checkpoint", "Qwen3-8B")
  )
  r = c.real
  # checkpoint_dir: a Hugging Face directory, e.g. Qwen3-8B
  r.checkpoint_dtype = "bfloat16"
  r.update(
    num_detect=500,
    num_eval=1000,
    filler_sentences=60,
    buckets=(1024, 2048, 4096),
  )
  r.update(
    max_steps=50, paper_max_steps=100, detectors=("locos", "contrastive", "wu")
  )
  r.update(
    ks=(1, 2, 5, 10, 20, 50, 100),
    paper_ks=(1, 2, 5, 10, 20, 50, 100),
    num_random=5,
  )
  r.batch_size = 16
  return c
