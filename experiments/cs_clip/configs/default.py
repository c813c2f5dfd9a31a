"""CPU-scale reproduction on synthetic scenes (minutes on 2 CPU cores).

  python -m experiments.cs_clip.main --config=experiments/cs_clip/configs/default.py --workdir=runs/cs_clip

4,000 training scenes (24 x 24, two objects left/right, 80% on a co-occurrence prior, 90%
relation captions in either paraphrase form), 1,000 off-prior test scenes (2,000 half-truth
triples). Text encoders: weakly order-aware (main) and bag-of-words (order-blind baseline).
Per encoder and seed (3): 800 CLIP steps; then, for the weakly order-aware encoder, 400 steps of
plain CLIP, NegCLIP or CS-CLIP fine-tuning from them (batch 64, Adam 2e-3 then 5e-4, D = 32).
"""

import ml_collections

T_CI = "95% t-interval half-width over the 3 seeds"


def get_config():
  c = ml_collections.ConfigDict()
  c.n_train = 4000
  c.n_test = 1000
  c.size = 24
  c.prior = 0.8
  c.test_prior = 0.0
  c.distractors = 0
  c.vertical = False
  c.p_partial = 0.1
  c.p_paraphrase = 0.5
  c.dim = 32
  c.batch = 64
  c.pretrain_steps = 800
  c.finetune_steps = 400
  c.lr = 2e-3
  c.lr_finetune = 5e-4
  c.seeds = 3
  c.encoders = ("weak_order", "bow")
  c.finetune_encoders = ("weak_order",)
  c.arms = ("clip_ft", "negclip_ft", "cs_ft")
  c.cs_lambda_comp = 0.5
  c.cs_lambda_align = 0.25
  c.cs_lambda_rank = 0.1
  c.seed = 0
  c.claims = CLAIMS
  return c


# A half-truth item is a two-way choice (the correct caption or the same caption with a wrong
# relation added), so a CS-trained encoder whose accuracy does not clear 0.5 has not learnt
# the relation, whatever its gain over a control that sits below chance.
_CS_ABOVE_CHANCE = dict(
  value=0.5, metric="derived.cs_ht_relation", noise="derived.cs_ht_relation_ci"
)

CLAIMS = (
  dict(
    id="half_truths",
    statement="a contrastively trained dual encoder prefers half-true captions: adding a wrong "
    "relation to a correct short caption often raises its score (relation HT-acc of the "
    "CLIP-trained, weakly order-aware encoder)",
    paper_value=0.282,
    paper_text="CLIP prefers the correct shorter description 41.0% of the time, 28.2% when the "
    "added detail is a relation (COCO, NeurIPS abstract; arXiv v1: 40.6% / 32.9%)",
    metric="derived.baseline_ht_relation",
    direction="lower",
    held=0.5,
    partly=0.8,
    chance=0.5,
    noise="derived.baseline_ht_relation_ci",
    baselines={
      "bag-of-words encoder": "derived.bow_baseline_ht_relation",
      "random embeddings": "derived.chance_ht_relation",
    },
    fmt=".3f",
    note="held: the whole 95% interval below 0.5 (prefers the half-truth more often than not); "
    "partly: below 0.8 (fails on more than one triple in five); " + T_CI,
  ),
  dict(
    id="cs_raises_half_truth_accuracy",
    statement="component-supervised fine-tuning raises relation half-truth accuracy over a "
    "same-budget plain CLIP fine-tuning control",
    paper_text="CS-CLIP raises half-truth accuracy to 78.2% (from 41.0%)",
    metric="derived.cs_minus_clip_ft_ht_relation",
    direction="higher",
    held=0.02,
    noise="derived.cs_minus_clip_ft_ht_relation_ci",
    chance=_CS_ABOVE_CHANCE,
    fmt="+.3f",
    note="paired per-seed difference (same initialisation and batches), held when the whole "
    "95% interval is above +0.02; " + T_CI,
  ),
  dict(
    id="cs_keeps_retrieval",
    statement="... without hurting retrieval: image<->text R@1 of CS-CLIP within 2 points of "
    "the plain fine-tuning control",
    paper_text="preserving standard dual-encoder inference (zero-shot ImageNet 63.6 -> 59.9, "
    "arXiv v1)",
    metric="derived.cs_minus_clip_ft_r1",
    direction="higher",
    held=-0.02,
    noise="derived.cs_minus_clip_ft_r1_ci",
    fmt="+.3f",
    note="paired per-seed difference of the mean of i2t and t2i R@1 on 1,000 off-prior test "
    "scenes; held when the whole 95% interval is above -0.02; " + T_CI,
  ),
  dict(
    id="cs_beats_negclip",
    statement="the unit-level terms add to full-caption hard negatives: CS-CLIP beats a "
    "same-budget NegCLIP fine-tuning on relation half-truth accuracy",
    paper_text="CS-CLIP improves over NegCLIP-style fine-tuning on compositional benchmarks "
    "(+5.7 points average over the base model)",
    metric="derived.cs_minus_negclip_ft_ht_relation",
    direction="higher",
    held=0.02,
    noise="derived.cs_minus_negclip_ft_ht_relation_ci",
    chance=_CS_ABOVE_CHANCE,
    fmt="+.3f",
    note="paired per-seed difference; held when the whole 95% interval is above +0.02; " + T_CI,
  ),
)
