"""Paper-scale setting (accelerator hosts; never run in CI).

The paper's headline: on Qwen3-8B, mean-ablating the top-50 LOCOS heads takes
NoLiMa ROUGE-L from 0.401 to 0.000 while the strongest attention baseline keeps
0.292 (arXiv 2607.01002). What this config runs with the code in this
repository:

  python -m experiments.locos.main --config=experiments/locos/configs/full.py --workdir=runs/locos_full \
    --config.real.checkpoint_dir=/path/to/Qwen3-8B

* toy track at 5k steps, d = 128, 4 layers (≈ 20-40 min on 2 CPU cores, seconds on a GPU);
* SmolLM2-135M on 1,000 NoLiMa-style evaluation probes with ~1-4k-token contexts, the
  paper's decode length and k grid (one GPU/TPU, about an hour);
* the same probes on a Hugging Face checkpoint (below).

Qwen3-8B (the paper's model) runs as the 'checkpoint' track from its Hugging Face
checkpoint directory, which the user supplies (nothing is downloaded here).
`jaxpapers.lm.load_safetensors` reads config.json, the safetensors shards and tokenizer.json
('llama', 'qwen3' and 'gemma3_text' checkpoints; Qwen3's per-head q/k RMSNorm and untied head
included), in bfloat16 here (`real.checkpoint_dtype`): about 16 GB for the weights, so one
80 GB GPU; contexts of ~1-4k tokens (`real.buckets`; longer ones run on the blockwise
attention path, NoLiMa's go to 32k). Without `real.checkpoint_dir` the run stops before any
track with an error naming the flag; drop 'checkpoint' from `--config.tracks` to run the toy
and SmolLM2 tracks alone. The checkpoint track is judged by the same rules
(`default.real_claims`) as the small models'.
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
