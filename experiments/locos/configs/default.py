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
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed before the run.
  c.claims = CLAIMS
  return c


_PAPER = (
  "Qwen3-8B, NoLiMa: 50 LOCOS heads take ROUGE-L 0.401 -> 0.000; the best baseline "
  "keeps 0.292; parametric recall unaffected"
)


def _claims(track, what):
  return (
    dict(
      id=f"lower_k_collapse_{track}",
      statement=f"ablating the top LOCOS heads collapses non-literal retrieval at a lower k "
      f"than attention-based detectors ({what})",
      paper_text=_PAPER,
      metric=f"derived.{track}.collapse_k_advantage",
      direction="higher",
      held=1.0,
      fmt="+.0f",
      unit="heads",
      baselines={"random heads: collapse k": f"derived.{track}.collapse_k.random"},
      note="collapse k = smallest k on the grid halving the unablated non-literal score "
      "(never: max k + 1); measured = best attention detector's (Wu, contrastive, "
      "attention-spatial) collapse k minus LOCOS's",
    ),
    dict(
      id=f"parametric_recall_unaffected_{track}",
      statement=f"the LOCOS heads that collapse non-literal retrieval leave parametric "
      f"recall unaffected ({what})",
      paper_text=_PAPER,
      metric=f"derived.{track}.parametric_retained_at_collapse",
      direction="higher",
      held=0.9,
      fmt=".2f",
      note="parametric score with LOCOS's collapse-k heads ablated over the unablated "
      "score; held when >= 0.9 is kept",
    ),
  )


CLAIMS = _claims("toy", "toy decoder") + _claims("smollm2", "SmolLM2-135M")
