"""CPU-scale reproduction on a frozen SmolLM2-135M-Instruct (the spec's Track
B).

  python -m experiments.lanr.main --config=experiments/lanr/configs/default.py --workdir=runs/lanr

A synthetic multi-hop QA world (invented names; 1-, 2- and 3-hop questions whose
bridge entities appear only in retrieved documents) in two disconnected groups
of entities: 120 training questions about one group, 201 test questions about
the other (no shared entity or document). SmolLM2 stays frozen and reads every
context inside its own chat template after two worked examples; its hidden
states at the [PRED] cue (queries) and a [DOC] cue (documents) feed the
retrieval projections and two control heads (entropy labels, oracle labels), 3
seeds; then the loop runs online on the test questions with the model's own
(possibly wrong) retrievals, beside the label-free cosines of the frozen states
and the BM25 pipelines. Sized by a cost pilot to about two hours on 2 shared CPU
cores, dominated by LM forwards.
"""

import ml_collections

from jaxpapers.core import reporting as R


def get_config():
  c = ml_collections.ConfigDict()
  # 'gemma3' (configs/full.py) or 'random': a tiny random decoder (smoke)
  c.lm = "smollm2"
  c.random_lm = ml_collections.ConfigDict(dict(d_model=32, n_layers=2))
  # entity counts per group (two groups: training questions, test questions)
  c.kb = ml_collections.ConfigDict(
    dict(n_people=80, n_cities=10, n_countries=4, n_companies=8)
  )
  c.data_seed = 0
  c.n_train_per_hop = 40
  c.n_test_per_hop = 67  # 201 test questions
  c.rep_dim = 128
  c.rep_layer = -1
  c.control_width = 256
  c.t_max = 3
  c.tau_stop = 0.5
  c.tau_ret = 0.05
  c.lambda_ret = 1.0
  c.lambda_ctl = 0.5
  c.steps = 300
  c.lr = 3e-3
  c.weight_decay = 1e-4
  c.lm_batch = 24
  # contexts are padded to a multiple of this (one compilation per width)
  c.width_bucket = 32
  c.seeds = 3
  c.seed = 0
  c.n_boot = 10000  # bootstrap resamples over test questions
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed
  # before the run.
  c.claims = CLAIMS
  c.report = REPORT
  return c


METHOD_LABELS = {
  "fixed": "LAnR, fixed T_max = 3",
  "entropy_control": "LAnR + control (entropy labels)",
  "oracle_control": "LAnR + control (oracle labels)",
  "flare_entropy": "LAnR + FLARE-like entropy threshold",
  "one_call": "LAnR, always 1 call (trivial)",
  "oracle_hops": "LAnR, true hop count (oracle)",
}
FROZEN_LABELS = {
  "untrained_cosine": "untrained cosine of the frozen states, 3 calls",
  "whitened_cosine": "whitened cosine of the frozen states, 3 calls",
}
_HOPS = ("1-hop", "2-hop", "3-hop")
_REF = "metrics.references"
_FULL = "metrics.methods"


def _ref_row(
  label: str, key: str, calls: str = "{config.t_max}"
) -> tuple[str, ...]:
  r = f"{_REF}.{key}"
  return (
    label,
    f"{{{r}.recall_multihop:.3f}}",
    f"{{{r}.recall_all:.3f}}",
    calls,
    "-",
  )


def _hop_bars(name, ylabel, title, metric, methods, refs=()):
  ys = lambda head: tuple(f"{head}{metric}_{h}hop" for h in (1, 2, 3))
  series = [
    R.Series(
      over=_FULL,
      keys=methods,
      labels=METHOD_LABELS,
      label="{label}",
      x=_HOPS,
      y=tuple(f"{y}.mean" for y in ys("")),
      err=tuple(f"{y}.std" for y in ys("")),
    )
  ]
  for key, label in refs:
    series.append(
      R.Series(label=label, x=_HOPS, y=ys(f"{_REF}.{key}."), err=(0.0,) * 3)
    )
  panel = R.Panel(kind="bars", ylabel=ylabel, title=title, series=tuple(series))
  return R.Figure(name, panel, size=(max(4.0, 1.1 * len(_HOPS) + 2), 3.6))


_NH = "metrics.next_hop_accuracy"
_COLUMNS = (
  ("support recall (2-3 hop)", "recall_multihop"),
  ("support recall (all)", "recall_all"),
  ("retrieval calls", "calls"),
  ("EM", "em"),
)
_NH_ROWS = (
  ("untrained_cosine", "untrained cosine"),
  ("whitened_cosine", "whitened cosine"),
  ("random_heads", "random projection heads"),
)
REPORT = R.Report(
  tables=(
    R.Table(
      over=_FULL,
      keys=tuple(METHOD_LABELS),
      labels=METHOD_LABELS,
      columns=(
        R.Column("method", "{label}"),
        *(R.Column(h, f"{k}.mean", ".3f", err=f"{k}.std") for h, k in _COLUMNS),
      ),
      extra_rows=(
        *(_ref_row(label, key) for key, label in FROZEN_LABELS.items()),
        _ref_row(
          (
            "iterative BM25 (query, read, re-query with the bridge), "
            f"{{config.t_max}} calls [{{{_REF}.bm25_iterative.variant}}]"
          ),
          "bm25_iterative",
        ),
        _ref_row("BM25 question-as-query, top-1", "bm25_top1", "1"),
        _ref_row("BM25 question-as-query, top-{config.t_max}", "bm25_top3"),
        _ref_row("random {config.t_max} documents (trivial)", "random_docs"),
        (
          "closed book (no retrieval, trivial)",
          "-",
          "-",
          "0",
          f"{{{_REF}.closed_book.em:.3f}}",
        ),
        (
          "gold documents (upper bound)",
          "1.000",
          "1.000",
          "-",
          f"{{{_REF}.gold_docs.em:.3f}}",
        ),
      ),
    ),
    R.Table(
      title=(
        "Next-hop accuracy on gold prefixes (the next gold document is the "
        "best-scoring one):"
      ),
      columns=(
        R.Column("retriever", ""),
        R.Column("all hops", ""),
        R.Column("hop 1", ""),
      ),
      extra_rows=(
        (
          "trained heads (test, mean over seeds)",
          f"{{{_NH}.trained_heads.mean:.3f}}",
          f"{{{_NH}.trained_heads_hop1.mean:.3f}}",
        ),
        (
          "trained heads (their training contexts)",
          f"{{{_NH}.trained_heads_train_contexts.mean:.3f}}",
          "-",
        ),
        *(
          (label, f"{{{_NH}.{k}.all:.3f}}", f"{{{_NH}.{k}.hop1:.3f}}")
          for k, label in _NH_ROWS
        ),
      ),
    ),
  ),
  figures=(
    _hop_bars(
      "calls",
      "retrieval calls per question",
      "LAnR stopping rules on held-out questions",
      "calls",
      tuple(METHOD_LABELS),
    ),
    _hop_bars(
      "recall",
      "support recall",
      "all gold documents retrieved",
      "recall",
      ("fixed", "entropy_control"),
      refs=(*FROZEN_LABELS.items(), ("bm25_iterative", "iterative BM25")),
    ),
  ),
)


# The reader must answer from the gold documents before any accuracy or entropy
# comparison between retrieval policies can mean anything (a reader that never
# answers ties every policy at EM 0).
_READER_ANSWERS = (
  dict(
    metric="references.gold_docs.em",
    op=">=",
    value=0.5,
    why=(
      "the frozen reader answers from the gold documents (gold-context exact "
      "match >= 0.5)"
    ),
  ),
  dict(
    metric="references.gold_docs.em",
    minus="references.closed_book.em",
    op=">=",
    value=0.3,
    why=(
      "the answers come from the documents, not from the model's memory "
      "(gold-context minus closed-book exact match >= 0.3)"
    ),
  ),
)

# The retrieval heads must fit their own training contexts before their test
# retrieval can say anything about the method (a head that does not train tests
# the optimiser, not LAnR).
_HEADS_TRAIN = dict(
  metric="derived.train_next_hop_acc",
  op=">=",
  value=0.5,
  why=(
    "the trained heads retrieve the next gold document on their own training "
    "contexts (next-hop accuracy >= 0.5)"
  ),
)
_BOOT = (
  "; noise = 95% paired-bootstrap half-width over the test questions (seed "
  "means)"
)


def _claim(**fields):
  """A claim on a higher-is-better ``metric`` whose noise is its 95% half-width
  ``<metric>_ci``."""
  return dict(fields, noise=fields["metric"] + "_ci", direction="higher")


_ENTROPY = (
  "answer token entropy reliably signals retrieval sufficiency (arXiv "
  "abstract); spec's prediction AUROC > 0.8"
)


CLAIMS = (
  _claim(
    id="latent_beats_question_query",
    statement=(
      "LAnR's latent [PRED] queries (trained heads) retrieve the full "
      "evidence of multi-hop questions more often than the iterative lexical "
      "pipeline (BM25: query, read, re-query with the bridge entity)"
    ),
    paper_text=(
      "LAnR outperforms existing RAG methods (abstract; no number public)"
    ),
    metric="derived.lanr_minus_bm25_iter_multihop_recall",
    noise="derived.lanr_minus_bm25_iter_multihop_recall_ci",
    held=0.01,
    requires=[_HEADS_TRAIN],
    controls={
      "untrained cosine of the frozen states": (
        "derived.untrained_cosine_minus_bm25_iter_multihop_recall"
      ),
      "whitened cosine of the frozen states": (
        "derived.whitened_cosine_minus_bm25_iter_multihop_recall"
      ),
    },
    unit="support recall",
    fmt=".3f",
    note=(
      "support recall (all gold documents retrieved) on the 2- and 3-hop test "
      "questions, LAnR fixed T_max = 3 minus iterative BM25 with 3 calls (the "
      "better, on these questions, of two re-query forms: "
      "question + bridge entity, bridge entity alone; "
      "the read step is a perfect reader of the retrieved document's object)"
    )
    + _BOOT
    + (
      ". Controls: the same loop scored by a label-free cosine of the frozen "
      "states (no trained head); if one also beats the pipeline, "
      "the trained heads are not what wins"
    ),
  ),
  _claim(
    id="trained_heads_beat_frozen_cosine",
    statement=(
      "The trained [PRED]/[DOC] projections retrieve the full evidence more "
      "often than the best label-free cosine of the same frozen hidden states"
    ),
    paper_text=(
      "LAnR produces dense retrieval vectors from the hidden states of a "
      "designated [PRED] token (abstract)"
    ),
    metric="derived.trained_minus_frozen_cosine_recall",
    held=0.01,
    requires=[_HEADS_TRAIN],
    unit="support recall",
    fmt=".3f",
    note=(
      "support recall on all test questions, LAnR fixed T_max = 3 minus the "
      "better (by mean recall) of the untrained and the whitened cosine of "
      "the frozen states, both run in the same online loop with 3 calls"
    )
    + _BOOT,
  ),
  _claim(
    id="control_cuts_calls",
    statement=(
      "The MLP control head (entropy labels) reduces the mean number of "
      "retrieval calls against fixed T_max = 3"
    ),
    paper_text=(
      "improved inference efficiency through reduced number of retrieval "
      "calls (abstract; no number public)"
    ),
    metric="derived.calls_saved_entropy_control",
    held=0.5,
    partly=0.1,
    requires=list(_READER_ANSWERS),
    unit="calls per question",
    fmt=".2f",
    note=(
      "3 minus the calls of LAnR + control (entropy labels), all test questions"
    )
    + _BOOT,
  ),
  _claim(
    id="control_keeps_accuracy",
    statement=(
      "Stopping with the control head costs at most 2 points of exact match "
      "against fixed T_max = 3"
    ),
    paper_text=(
      "spec's expected direction: <= 2 points EM loss (reconstruction; "
      "no number public)"
    ),
    metric="derived.em_entropy_control_minus_fixed",
    held=-0.02,
    requires=list(_READER_ANSWERS),
    controls={"one retrieval call": "derived.trivial_one_call_em_minus_fixed"},
    unit="EM",
    fmt=".3f",
    note=(
      "teacher-forced greedy exact match of the answer after the final "
      "context, paired per question"
    )
    + _BOOT,
  ),
  _claim(
    id="entropy_signals_sufficiency",
    statement=(
      "Answer-token entropy separates contexts that hold all gold documents "
      "from contexts that do not"
    ),
    paper_text=_ENTROPY,
    metric="derived.entropy_auroc",
    held=0.8,
    partly=0.6,
    chance=0.5,
    requires=list(_READER_ANSWERS),
    controls={"documents in context": "sufficiency.docs_in_context_auroc"},
    unit="AUROC",
    fmt=".3f",
    note=(
      "AUROC of -H̄ (mean teacher-forced answer entropy of the frozen LM) for "
      "sufficiency, on the held-out gold-prefix contexts; "
      "noise = 95% bootstrap half-width, questions resampled with all their "
      "contexts. Control: the number of documents in the context"
    ),
  ),
  _claim(
    id="entropy_sufficiency_same_docs",
    statement=(
      "Answer-token entropy separates sufficient from insufficient contexts "
      "that hold the same number of documents"
    ),
    paper_text=_ENTROPY,
    metric="derived.entropy_auroc_same_docs",
    held=0.8,
    partly=0.6,
    chance=0.5,
    requires=list(_READER_ANSWERS),
    unit="AUROC",
    fmt=".3f",
    note=(
      "as entropy_signals_sufficiency, over (sufficient, "
      "insufficient) pairs with the same number of documents in the context "
      "(a 1-hop question with its document against a 2- or 3-hop question "
      "with its first one, ...), where counting documents is at chance by "
      "construction"
    ),
  ),
)
