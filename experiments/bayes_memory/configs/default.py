"""CPU-scale run with the real SmolLM2-135M-Instruct (about an hour of LM scoring on 2 busy cores).

  python -m experiments.bayes_memory.main --config=experiments/bayes_memory/configs/default.py \
      --workdir=runs/bayes_memory

3 data seeds x 34 generated dialogues x 2 questions = 204 questions (6 user turns each, a quarter
of the questions need no memory). Every question is scored in 9 contexts (no memory, a placebo
turn, each turn alone, the whole history) for the reference response, and in 8 for a contrast
response naming a wrong (stale, distractor or other) value; each common token prefix runs once
(``scoring = 'shared'``), each dialogue's scores are a cell of the store. The distilled selector
is trained leave-one-seed-out.

The placebo gate (ln 10) and the question count (204) were chosen after the first runs, on the
dialogues of data seeds 0-2 (the count was raised from 84 after a tie). Both are registered
here, as preconditions of the claims below, and decided on fresh dialogues: data seeds 3-5,
which no earlier run generated. Greedy set selection (``greedy_k > 0``) costs about 40% more LM
rows and is off here (on in full.py; the smoke run exercises it).
"""

import math

import ml_collections

from jaxpapers.core import reporting as R

FRESH_SEEDS = (3, 4, 5)  # data seeds 0-2 were seen when the gate and the count were chosen
N_DIALOGUES = 34
# Placebo-controlled access threshold: read memory iff the best turn beats a content-free note
# by > ln 10 nats (Jeffreys' "strong evidence", Bayes factor > 10).
TAU_PLACEBO = math.log(10.0)


def get_config():
  c = ml_collections.ConfigDict()
  c.model = "smollm2"  # or 'tiny' (random init, WordTokenizer: smoke tests only)
  c.seeds = FRESH_SEEDS
  c.n_dialogues = N_DIALOGUES
  c.n_turns = 6
  c.n_queries = 2
  c.change_rate = 0.5
  c.distractor_rate = 0.5
  c.density = 0.6
  c.memory_free_rate = 0.25
  c.buckets = (56, 80, 128, 160)  # padded row lengths: one compilation each (if used)
  c.group_dialogues = 6  # dialogues whose rows share padded batches (each its own cell)
  c.feature_len = 32  # padded length of a turn or query for the pooled features
  c.batch_tokens = 512  # rows per forward = batch_tokens // bucket length
  c.max_targets = 24
  # 'rows': every row run in full (the committed runs); 'shared': bm.score_rows_shared runs each
  # common token prefix once (y and y' share their prompt, the questions the memory block): the
  # same log-probs to float32 round-off, 1.71x faster in benchmarks/bayes_memory_shared_prompt.py
  c.scoring = "shared"
  c.tau = 0.0  # access threshold on the log Bayes factor (nats)
  c.tau_placebo = TAU_PLACEBO
  c.greedy_k = 0  # largest greedy Bayes-factor set (0: method off)
  # False: score nothing, analyse the dialogues whose cells exist for every seed (a run stopped
  # at a deadline); the analysed indices are recorded in results.json.
  c.score_missing = True
  c.beta = 1.0  # distillation temperature
  c.steps = 300
  c.lr = 3e-3
  c.hidden = 64
  c.n_boot = 2000
  c.seed = 0
  c.claims = make_claims(len(FRESH_SEEDS) * N_DIALOGUES * 2)
  c.report = REPORT
  return c


# experiments.bayes_memory.train.report_view: one entry per method (table: the reported ones).
REPORT = R.Report(
  view="experiments.bayes_memory.train:report_view",
  tables=(
    R.Table(
      over="view.table",
      columns=(
        R.Column("method", "{label}"),
        R.Column("accuracy ± 95% CI", "accuracy", ".3f", err="accuracy_ci"),
        R.Column("per-seed mean ± std", "seed_mean", ".3f", err="seed_std"),
        R.Column("log p(y)/token", "loglik_per_token", ".3f"),
        R.Column("recall@1", "evidence_recall_at_1", ".3f"),
        R.Column("stale@1", "stale_rate_at_1", ".3f"),
        R.Column("reads memory", "read_fraction", ".3f"),
        R.Column("turns read", "turns_read_fraction", ".3f"),
      ),
    ),
  ),
  figures=(
    R.Figure(
      "accuracy",
      R.Panel(
        kind="bars",
        ylabel="fraction",
        title="Turn selection on changing-preference dialogues (95% bootstrap CI)",
        lines=(R.Line(0.5, style="-", color="k"),),
        series=(
          R.Series(
            points="view.methods",
            x="{key}",
            y="accuracy",
            err="accuracy_ci",
            label="accuracy (preference questions)",
          ),
          R.Series(
            points="view.methods", x="{key}", y="evidence_recall_at_1", label="evidence recall@1"
          ),
        ),
      ),
      size=(10, 4),
    ),
    R.Figure(
      "reads_vs_accuracy",
      R.Panel(
        xlabel="fraction of history turns put in the prompt",
        ylabel="accuracy",
        title="Memory read vs accuracy",
        series=(
          R.Series(
            over="view.methods",
            x="turns_read_fraction",
            y="accuracy",
            err="accuracy_ci",
            style="o",
            label="{key}",
            annotate=True,
          ),
        ),
      ),
      size=(5, 3.8),
    ),
  ),
)


_BASE = "max of similarity, BM25 and recency top-1"


def _registered(n_questions: int) -> list[dict]:
  """Preconditions that pin the registered data: the question count and the fresh seeds."""
  return [
    dict(
      metric="derived.n_questions",
      op=">=",
      value=n_questions,
      why=f"the registered {n_questions} questions were analysed (none missing)",
    ),
    dict(
      metric="derived.n_questions",
      op="<=",
      value=n_questions,
      why=f"no questions beyond the registered {n_questions} were added",
    ),
    dict(
      metric="derived.min_seed",
      op=">=",
      value=min(FRESH_SEEDS),
      why="fresh dialogues: data seeds 0-2 were seen when the placebo gate and the question "
      "count were chosen",
    ),
  ]


# The reader check: a comparison of turn selectors means nothing if the LM cannot answer even
# with the turn that holds the current value.
_READER = dict(
  metric="derived.accuracy_gold_turn_lo",
  op=">=",
  value=0.6,
  why="the LM answers from the gold evidence: with the turn holding the current value in "
  "context it picks the reference over the contrast clearly more often than a coin flip "
  "(lower end of the 95% interval >= 0.6)",
)
_GATE = [
  dict(
    metric="derived.tau_placebo", op=op, value=TAU_PLACEBO, why="the registered placebo gate ln 10"
  )
  for op in (">=", "<=")
]


def make_claims(n_questions: int) -> tuple[dict, ...]:
  """The claims, with the registered question count ``n_questions`` as a precondition."""
  reg = _registered(n_questions)
  return (
    *_selection_claims(reg),
    *_gate_claims(
      reg,
      "",
      (),
      reads=(
        "Access control reads memory less often (learned gate)",
        "fraction of all questions (a quarter need no memory) on which the distilled gate opens; "
        "always-on selection reads on 1.0",
      ),
      no_loss=(
        "... at no loss of accuracy",
        "accuracy on preference questions of the gated minus the always-on distilled selector; "
        "held if the whole 95% interval is above -0.03 (3 points)",
      ),
    ),
    _gain_claim(reg),
    *_gate_claims(
      reg,
      "placebo_",
      tuple(_GATE),
      reads=(
        "Access control on the placebo-controlled Bayes factor reads memory less often "
        "(learned gate)",
        "fraction of all questions on which the distilled gate trained on the label "
        "1[max_i log p(y | m_i, x) - log p(y | placebo, x) > ln 10] opens (leave-one-seed-out); "
        "same rule as access_reads_less",
      ),
      no_loss=(
        "... at no loss of accuracy (placebo-controlled learned gate)",
        "accuracy on preference questions of the placebo-gated minus the always-on distilled "
        "selector; held if the whole 95% interval is above -0.03; same rule as access_no_loss",
      ),
    ),
  )


def _selection_claims(reg: list[dict]) -> tuple[dict, ...]:
  """The distilled and the oracle Bayes-factor selectors against the best retriever."""
  return (
    dict(
      id="distilled_beats_retrievers",
      statement="Bayes-factor selection answers preference questions better than similarity, "
      "BM25 and recency (the distilled selector, which needs no reference at inference)",
      paper_text="outperforms existing embedding-based retrieval on long-context, "
      "preference-intensive tasks (abstract)",
      metric="derived.acc_gain_distilled_vs_best_retriever",
      noise="derived.acc_gain_distilled_vs_best_retriever_ci",
      direction="higher",
      held=0.0,
      fmt=".3f",
      # Two-way forced choice: the selector's own accuracy must clear a coin flip.
      chance=dict(
        value=0.5, metric="derived.accuracy.distilled", noise="derived.accuracy_ci.distilled"
      ),
      requires=[*reg, _READER],
      baselines={
        "distilled selector (usable)": "derived.accuracy.distilled",
        "best retriever": "derived.best_retriever_accuracy",
        "recency": "derived.accuracy.recency",
        "all memory": "derived.accuracy.all_memory",
        "no memory": "derived.accuracy.no_memory",
        "oracle Bayes factor (upper bound)": "derived.accuracy.oracle_bf",
      },
      note="two-way forced-choice accuracy (log p of the reference > log p of the same response "
      f"naming a wrong value) on preference questions, distilled top-1 minus the {_BASE} (the "
      "best retriever on each resample); 95% paired bootstrap interval over questions; held if "
      "the whole interval is > 0, inconclusive (a tie) if it straddles 0",
    ),
    dict(
      id="oracle_bf_beats_retrievers",
      statement="Selecting the turn with the largest Bayes factor (uses the reference: an upper "
      "bound) beats similarity, BM25 and recency",
      paper_text="the Bayes factor measures evidence strength (abstract)",
      metric="derived.acc_gain_oracle_vs_best_retriever",
      noise="derived.acc_gain_oracle_vs_best_retriever_ci",
      direction="higher",
      held=0.0,
      fmt=".3f",
      oracle=True,  # scores every turn against the reference answer, which a user does not have
      requires=[*reg, _READER],
      note=f"accuracy of the top-1 Bayes-factor turn minus the {_BASE}; same interval and rule",
    ),
  )


def _gate_claims(
  reg: list[dict], p: str, gate_requires: tuple, reads: tuple[str, str], no_loss: tuple[str, str]
) -> tuple[dict, dict]:
  """One learned gate's claims: it reads memory less often, at no loss of accuracy.

  ``p`` prefixes the claim ids and the gate's metrics ("" or "placebo_"); ``gate_requires``
  are preconditions on the gate itself; ``reads`` and ``no_loss`` are (statement, note).
  """
  reads_metric = f"derived.read_fraction.distilled_{p}gated"
  return (
    dict(
      id=f"{p}access_reads_less",
      statement=reads[0],
      paper_text="regulate memory usage based on expected utility (abstract)",
      metric=reads_metric,
      direction="lower",
      held=0.9,
      fmt=".3f",
      requires=[*reg, *gate_requires],
      note=reads[1],
    ),
    dict(
      id=f"{p}access_no_loss",
      statement=no_loss[0],
      paper_text="a unified signal for both memory access and selection (abstract)",
      metric=f"derived.acc_gain_{p}gated_vs_ungated",
      noise=f"derived.acc_gain_{p}gated_vs_ungated_ci",
      direction="higher",
      held=-0.03,
      fmt=".3f",
      requires=[
        *reg,
        *gate_requires,
        dict(
          metric=reads_metric,
          op="<=",
          value=0.9,
          why="the gate closes on some questions (reads on at most 0.9 of them, the bar of "
          f"{p}access_reads_less), so 'no loss' is measured on a gate that acts",
        ),
      ],
      note=no_loss[1],
    ),
  )


def _gain_claim(reg: list[dict]) -> dict:
  """How much of the oracle Bayes factor's gain the distilled selector keeps."""
  return dict(
    id="distilled_keeps_gain",
    statement="The distilled selector keeps most of the Bayes-factor gain at no extra LM cost",
    paper_text="the model learns to identify salient turns (abstract)",
    metric="derived.distilled_gain_ratio",
    noise="derived.distilled_gain_ratio_ci",
    direction="higher",
    held=0.5,
    partly=0.25,
    fmt=".2f",
    requires=[*reg, _READER],
    note="(acc distilled - acc no memory) / (acc oracle Bayes factor - acc no memory); held "
    "if the whole interval is >= 0.5, partly if >= 0.25. The LM-token saving per question "
    "is reported as derived.lm_token_saving",
  )
