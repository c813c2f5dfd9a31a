"""Paper-scale setting (accelerator hosts; never run in CI).

  python -m experiments.locos.main --config=experiments/locos/configs/full.py \
    --workdir=runs/locos_full --config.real.checkpoint_dir=/path/to/Qwen3-8B

The toy track at 5k steps, SmolLM2 on 1,000 probes with 1-4k-token contexts, and the paper's
model (Qwen3-8B) as the 'checkpoint' track from a Hugging Face directory the user supplies
(bfloat16: one 80 GB GPU), judged by the same rules. Without `real.checkpoint_dir` the run
stops before any track with an error naming the flag.
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.toy.d_model = 128
  c.toy.n_layers = 4
  c.toy.ffn_dim = 256
  c.toy.num_names = 16
  c.toy.num_landmarks = 16
  c.toy.num_fillers = 16
  c.toy.prompt_len = 40
  c.toy.max_needles = 4
  c.toy.steps = 5000
  c.toy.num_detect = 256
  c.toy.num_eval = 512
  c.toy.ks = (1, 2, 4, 8, 12, 16)
  c.toy.num_random = 5
  c.tracks = ("toy", "smollm2", "checkpoint")
  c.real.checkpoint_dir = ""  # a Hugging Face checkpoint directory, e.g. Qwen3-8B
  c.real.checkpoint_dtype = "bfloat16"
  c.claims = default.CLAIMS + default.TOY_CLAIMS + default.real_claims("checkpoint", "Qwen3-8B")
  c.real.num_detect = 500
  c.real.num_eval = 1000
  c.real.filler_sentences = 60
  c.real.buckets = (1024, 2048, 4096)
  c.real.max_steps = 50
  c.real.paper_max_steps = 100
  c.real.detectors = ("locos", "contrastive", "wu")
  c.real.ks = (1, 2, 5, 10, 20, 50, 100)
  c.real.paper_ks = (1, 2, 5, 10, 20, 50, 100)
  c.real.num_random = 5
  c.real.batch_size = 16
  return c
