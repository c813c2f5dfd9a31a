"""CPU-scale reproduction on synthetic scenes (about two hours on 2 shared CPU
cores).

  python -m experiments.cs_clip.main --config=experiments/cs_clip/configs/default.py --workdir=runs/cs_clip

8,000 training scenes (24 x 24, two objects left/right, 80% on a co-occurrence
prior, 90% relation captions in either paraphrase form), 2,000 off-prior test
scenes (2,000 relation half-truth triples, 2,000 retrieval queries each way,
2,000 relation-foil pairs). Text encoders: weakly order-aware (the method's
encoder), bag-of-words (order-blind baseline) and positional (order-aware
control). Per encoder and seed (5): 1,600 CLIP steps; then 800 steps of plain
CLIP, NegCLIP or CS-CLIP fine-tuning of the weakly order-aware encoder, and of
plain CLIP fine-tuning of the positional one (batch 64, Adam 2e-3 then 5e-4, D =
32, evaluated and checkpointed every 200 steps).

The scale (steps, data, seeds, test items) was set from the CPU budget, before
this run, to twice the steps and data of the first run, whose CS-CLIP model
ended at chance; the seed and item counts are registered as preconditions of the
claims below.
"""

import ml_collections

from jaxpapers.core import reporting as R

N_SEEDS = 5
N_TEST = 2000
CI = (
  "95% interval: the wider of a paired percentile bootstrap over the "
  f"{N_TEST:,} test items (seed-averaged outcomes, "
  f"10,000 resamples) and a paired t-interval over the {N_SEEDS} seeds"
)


def get_config():
  c = ml_collections.ConfigDict(
    dict(
      n_train=8000,
      n_test=N_TEST,
      size=24,
      prior=0.8,
      test_prior=0.0,
      distractors=0,
      vertical=False,
      p_partial=0.1,
      p_paraphrase=0.5,
      dim=32,
      batch=64,
      pretrain_steps=1600,
      finetune_steps=800,
      chunk_steps=200,
      lr=2e-3,
      lr_finetune=5e-4,
      seeds=N_SEEDS,
      encoders=("weak_order", "bow", "positional"),
      finetune_encoders=("weak_order", "positional"),
      arms=("clip_ft", "negclip_ft", "cs_ft"),
      # the positional encoder: plain CLIP fine-tuning only
      control_arms=("clip_ft",),
      # the CS arm's loss (the reference's documented "full spectrum" mix,
      # without paraphrases)
      cs_lambda_comp=0.5,
      cs_lambda_align=0.25,
      cs_lambda_rank=0.1,
      n_boot=10000,  # bootstrap resamples of the item intervals
      seed=0,
    )
  )
  c.claims = CLAIMS
  c.report = report_for(c.arms)
  return c


def report_for(arms) -> R.Report:
  """The table and figures of a run with the fine-tuning ``arms`` (after
  ``clip``)."""
  # over seeds
  ms = lambda h, k: R.Column(h, f"{k}|mean", ".3f", err=f"{k}|std")
  table = R.Table(
    title=(
      "**Half-truth accuracy and retrieval** (synthetic scenes; "
      "mean ± std over {config.seeds} seeds; `clip` = after "
      "{config.pretrain_steps} CLIP steps, the arms after "
      "{config.finetune_steps} more steps from it)"
    ),
    over="metrics.summary.*",  # encoder -> model -> per-seed lists
    columns=(
      R.Column("text encoder", "{key0}"),
      R.Column("model", "{key}"),
      ms("HT-acc entity", "ht_entity"),
      ms("HT-acc relation", "ht_relation"),
      ms("R@1 (i2t/t2i mean)", "r1"),
      ms("relation-foil acc", "relation_foil_acc"),
    ),
    extra_rows=(
      (
        "-",
        "random embeddings (chance)",
        "{metrics.chance.entity:.3f}",
        "{metrics.chance.relation:.3f}",
        "-",
        "-",
      ),
    ),
  )
  models = ("clip", *arms)

  def bars(metric, title, lines=()):
    series = R.Series(
      over="metrics.summary",  # one series per encoder that ran every arm
      when=models[-1],
      label="{key}",
      x=models,
      y=tuple(f"{n}.{metric}|mean" for n in models),
      err=tuple(f"{n}.{metric}|std" for n in models),
    )
    panel = R.Panel(
      kind="bars", ylabel=metric, title=title, lines=lines, series=(series,)
    )
    return R.Figure(metric, panel, size=(max(4.0, 1.1 * len(models) + 2), 3.6))

  return R.Report(
    tables=(table,),
    figures=(
      bars(
        "ht_relation",
        "HT-acc, relation added",
        (R.Line(0.5, style="-", color=("k")),),
      ),
      bars("r1", "R@1"),
    ),
  )


# The registered scale: a run with fewer seeds or test items cannot decide the
# claims.
_SCALE = (
  dict(
    metric="derived.n_seeds",
    op=">=",
    value=N_SEEDS,
    why=f"the registered {N_SEEDS} seeds were trained",
  ),
  dict(
    metric="derived.n_relation_items",
    op=">=",
    value=N_TEST,
    why=f"the registered {N_TEST:,} relation half-truth triples were evaluated",
  ),
)
# A half-truth item needs the encoder to tell a true relation from a wrong one;
# an encoder that cannot (the bag of words) prefers every half-truth and decides
# nothing about the mechanism.
_SEES_RELATION = dict(
  metric="derived.baseline_relation_foil_acc_lo",
  op=">=",
  value=0.6,
  why=(
    "the pre-trained CLIP encoder sees the relation: "
    "it prefers the true relation caption to its relation foil clearly more "
    "often than a coin flip (lower end of the 95% interval >= 0.6)"
  ),
)
# A half-truth item is a two-way choice (the correct caption or the same caption
# with a wrong relation added), so a CS-trained encoder whose accuracy does not
# clear 0.5 has not learnt the relation, whatever its gain over a control that
# sits below chance.
_CS_ABOVE_CHANCE = dict(
  value=0.5, metric="derived.cs_ht_relation", noise="derived.cs_ht_relation_ci"
)

CLAIMS = (
  dict(
    id="half_truths",
    statement=(
      "a contrastively trained dual encoder prefers half-true captions: "
      "adding a wrong relation to a correct short caption often raises its "
      "score (relation HT-acc of the CLIP-trained, weakly order-aware encoder)"
    ),
    paper_value=0.282,
    paper_text=(
      "CLIP prefers the correct shorter description 41.0% of the time, "
      "28.2% when the added detail is a relation (COCO, NeurIPS abstract; "
      "arXiv v1: 40.6% / 32.9%)"
    ),
    metric="derived.baseline_ht_relation",
    direction="lower",
    held=0.5,
    partly=0.8,
    chance=0.5,
    noise="derived.baseline_ht_relation_ci",
    requires=[*_SCALE, _SEES_RELATION],
    baselines={
      "bag-of-words encoder": "derived.bow_baseline_ht_relation",
      "random embeddings": "derived.chance_ht_relation",
    },
    fmt=".3f",
    note=(
      "held: the whole 95% interval below 0.5 (prefers the half-truth more "
      "often than not); partly: below 0.8 (fails on more than one triple in "
      "five); "
    )
    + CI,
  ),
  dict(
    id="cs_raises_half_truth_accuracy",
    statement=(
      "component-supervised fine-tuning raises relation half-truth accuracy "
      "over a same-budget plain CLIP fine-tuning control, "
      "and an order-aware text encoder with plain CLIP fine-tuning does not"
    ),
    paper_text="CS-CLIP raises half-truth accuracy to 78.2% (from 41.0%)",
    metric="derived.cs_minus_clip_ft_ht_relation",
    direction="higher",
    held=0.02,
    noise="derived.cs_minus_clip_ft_ht_relation_ci",
    chance=_CS_ABOVE_CHANCE,
    requires=[*_SCALE, _SEES_RELATION],
    # Does an encoder that sees word order close the gap without the CS loss?
    # Its gain over the same reference is judged by the same rule, on its point
    # value (the stricter test).
    controls={
      "order-aware encoder, plain CLIP fine-tuning": (
        "derived.order_aware_clip_ft_minus_clip_ft_ht_relation"
      ),
    },
    baselines={
      "order-aware encoder, plain CLIP fine-tuning (HT-acc)": (
        "derived.order_aware_clip_ft_ht_relation"
      ),
    },
    fmt="+.3f",
    note=(
      "CS-CLIP minus plain CLIP fine-tuning of the weakly order-aware encoder "
      "(same initialisation, batches and test items); "
      "held when the whole interval is above +0.02, "
      "the CS model's own accuracy is above chance by its whole interval, "
      "and the positional encoder's plain fine-tuning does not gain +0.02 "
      "over the same reference; "
    )
    + CI,
  ),
  dict(
    id="cs_keeps_retrieval",
    statement=(
      "... without hurting retrieval: image<->text R@1 of CS-CLIP within 2 "
      "points of the plain fine-tuning control"
    ),
    paper_text=(
      "preserving standard dual-encoder inference (zero-shot ImageNet 63.6 -> "
      "59.9, arXiv v1)"
    ),
    metric="derived.cs_minus_clip_ft_r1",
    direction="higher",
    held=-0.02,
    noise="derived.cs_minus_clip_ft_r1_ci",
    requires=list(_SCALE),
    fmt="+.3f",
    note=(
      f"difference of the mean of i2t and t2i R@1 on the {N_TEST:,} off-prior "
      "test scenes; held when the whole interval is above -0.02; "
    )
    + CI,
  ),
  dict(
    id="cs_beats_negclip",
    statement=(
      "the unit-level terms add to full-caption hard negatives: "
      "CS-CLIP beats a same-budget NegCLIP fine-tuning on relation half-truth "
      "accuracy"
    ),
    paper_text=(
      "CS-CLIP improves over NegCLIP-style fine-tuning on compositional "
      "benchmarks (+5.7 points average over the base model)"
    ),
    metric="derived.cs_minus_negclip_ft_ht_relation",
    direction="higher",
    held=0.02,
    noise="derived.cs_minus_negclip_ft_ht_relation_ci",
    chance=_CS_ABOVE_CHANCE,
    requires=[*_SCALE, _SEES_RELATION],
    fmt="+.3f",
    note=(
      "CS-CLIP minus NegCLIP fine-tuning (paired as above); "
      "held when the whole interval is above +0.02 and the CS model's own "
      "accuracy is above chance by its whole interval; "
    )
    + CI,
  ),
)
