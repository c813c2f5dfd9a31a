"""CPU-scale LOCOS reproduction (minutes on 2 cores).

  python -m experiments.locos.main --config=experiments/locos/configs/default.py --workdir=runs/locos

Toy track: a 3-layer, 4-head (2 KV heads) decoder trained on the synthetic
literal / non-literal retrieval task, then LOCOS vs attention detectors and
mean-query ablation curves. Real-model track: SmolLM2-135M-Instruct on
NoLiMa-style probes built offline (skipped with a note when its wheel is absent).
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.seed = 0
  c.tracks = ("toy", "smollm2")
  # --- toy task and model
  c.toy = ml_collections.ConfigDict()
  c.toy.num_names = 8
  c.toy.num_landmarks = 8
  c.toy.num_fillers = 8
  c.toy.prompt_len = 20
  c.toy.max_needles = 2
  c.toy.d_model = 64
  c.toy.n_layers = 3
  c.toy.n_heads = 4
  c.toy.n_kv_heads = 2
  c.toy.ffn_dim = 128
  c.toy.steps = 2000
  c.toy.batch_size = 32
  c.toy.learning_rate = 3e-3
  c.toy.parametric_frac = 0.25
  c.toy.literal_frac = 0.4
  c.toy.checkpoint_every = 500
  c.toy.num_detect = 64
  c.toy.num_eval = 128
  c.toy.ks = (1, 2, 3, 4, 6)
  c.toy.num_random = 3
  c.toy.ablation_mode = "mean_q"
  # --- real model
  c.real = ml_collections.ConfigDict()
  c.real.num_trials = 24  # probes generated per kind = num_trials + num_eval
  c.real.num_eval = 24
  c.real.filler_sentences = 2
  c.real.max_steps = 6
  c.real.ks = (1, 5, 20)
  c.real.num_random = 1
  c.real.batch_size = 8
  return c
