"""CPU-scale reproduction (about an hour on 2 shared CPU cores).

  python -m experiments.evidence_coverage.main \
      --config=experiments/evidence_coverage/configs/default.py --workdir=runs/evidence_coverage

Shifted local linear ICL (d = 16) in five (pool size P, cluster count J)
settings whose mean cluster size P / J is 39, 156 or 625, each reached at two
pool sizes where it can be (so that the cluster size, which pins the
coverage-margin boundary k* by construction, and the pool size vary separately).
750 queries per cell (250 dev queries calibrate the threshold controller, 500
test queries give every curve), top-k in {1, 2, 4, ..., 1024} from one dense
retrieval, shift grid (s_x, s_w) in {0, 1, 2}^2, 3 seeds (the worlds are paired
across the shift cells of a seed). Readers: one-step GD (fixed eta), one-step GD
(exact line-search step), ridge (fixed lambda), prior-only. Contexts: retrieved,
oracle, labels-shuffled, other-query, random.
"""

import ml_collections

from jaxpapers.core import reporting as R

# Claim thresholds are the ones registered for the first run of this experiment;
# what is new here is the guards (per-reader oracle controls, the cluster-size
# and per-setting budget controls, preconditions on the cells where retrieval
# helps) and the settings grid. cells where retrieval helps a reader: enough for
# a fraction to mean much
MIN_GAIN_CELLS = 20


def get_config():
  c = ml_collections.ConfigDict()
  c.d = 16
  c.settings = ((2500, 64), (10000, 256), (10000, 64), (40000, 64), (10000, 16))
  c.r = 2.0
  c.tau_w = 0.1
  c.noise = 0.1
  c.n_dev = 250
  c.n_test = 500
  # queries per k_sweep call (bounds the [n_k, Q, K, d] intermediates)
  c.query_chunk = 125
  c.ks = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
  c.s_x = (0.0, 1.0, 2.0)
  c.s_w = (0.0, 1.0, 2.0)
  c.seeds = 3
  c.seed = 0
  c.ridge_lam = 1.0
  c.eta_scale = 1.0  # eta = eta_scale / mean_pool |x|^2, fixed across k
  c.tol_rel = 0.25  # answer correct when |yhat - y| < tol_rel * std(pool y)
  c.regime_tol = 0.01
  c.decline_tol = 0.02  # a drop of accuracy beyond this counts as a decline
  # recall must rise by at least this after the accuracy peak
  c.recall_rise = 0.1
  # a cell counts for a reader when retrieval lifts its best accuracy this much
  c.min_gain = 0.05
  c.n_boot = 10000
  # shard queries over all devices when the query blocks divide
  c.use_mesh = True
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed
  # before the run.
  c.claims = CLAIMS
  c.report = REPORT
  return c


_MS = ".3f±{0}.s; "  # a mean ± std column of the view's {"m", "s"} entries
_READERS = ("gd", "gd_ls", "ridge")
REPORT = R.Report(
  view="experiments.evidence_coverage.evaluate:report_view",
  tables=(
    R.Table(
      title=(
        "Budgets k in {view.ks}; {config.n_test} test queries per cell; "
        "k* and k_peak per seed (seed 0/1/...), accuracy mean ± std over "
        "{config.seeds} seeds."
      ),
      over="view.rows",
      columns=R.columns(
        (
          "P={n_pool}; J={n_clusters}; s_x={s_x}; s_w={s_w}; "
          "recall@k_max=recall.m:.3f±recall.s; k*={k_star}; "
          "k_peak ridge={kp.ridge}; k_peak GD={kp.gd}; "
          "k_peak GD-ls={kp.gd_ls}; "
        )
        + "".join(
          f"{h}={k}.m:" + _MS.format(k)
          for h, k in (
            ("ridge acc peak", "ridge_peak"),
            ("ridge acc@k_max", "ridge_last"),
            ("ridge oracle@k_max", "ridge_oracle"),
            ("GD-ls acc peak", "ls_peak"),
            ("GD-ls oracle@k_max", "ls_oracle"),
          )
        )
        + "prior={prior_acc}"
      ),
    ),
    R.Table(
      title=(
        "Where k* moves with the shift: per setting, "
        "the range over the shift grid of the seed-median log2 k* and log2 "
        "k_peak (0: does not move), and their Spearman correlation over the "
        "shift cells ('-': one of them does not move)."
      ),
      over="metrics.derived.shift_response",
      columns=R.columns(
        "P={n_pool}; J={n_clusters}; k(P/J)={cluster_k}; "
        "k* over shifts (octaves)={k_star_range_octaves:.2g}; "
        + "".join(
          f"{r} peak over shifts (octaves)={{k_peak_range_octaves_{r}:.2g}}; "
          for r in _READERS
        )
        + "; ".join(
          f"Spearman k*, {r} peak={{spearman_k_star_k_peak_{r}:.2g}}"
          for r in _READERS
        )
      ),
    ),
    R.Table(
      title=(
        "Per reader, over the cells where retrieval lifts its best accuracy "
        "by >= {config.min_gain} over prior-only: the claims' fractions and "
        "the budget baselines."
      ),
      over="view.readers",
      columns=R.columns(
        "reader={key}; cells with gain={n}; decoupling "
        "(retrieved)=decoupling_fraction:.2f; decoupling (oracle)=oracle:.2f; "
        "k* within 2x=kstar_within_2x:.2f; k(P/J) within "
        "2x=cluster_k_within_2x:.2f; per-setting k within "
        "2x=setting_k_within_2x:.2f; constant k within "
        "2x=constant_k_within_2x:.2f"
      ),
    ),
  ),
  figures=(
    R.Figure(
      "recall_vs_accuracy",
      R.Panel(
        over="view.corners",
        title="{title}",
        xlabel="top-k",
        logx=True,
        ylim=(0, 1.02),
        series=(
          R.Series(
            over="contexts",
            x="config.ks",
            y="y",
            err="err",
            band=True,
            label=("acc, {key}"),
          ),
          R.Series(
            x="config.ks", y="recall", style="--", color="k", label=("Recall@k")
          ),
        ),
        lines=(
          R.Line("prior", label="prior-only acc"),
          R.Line(
            "k_star",
            label="k* (seed median)",
            color="r",
            style="-",
            vertical=True,
          ),
        ),
      ),
      size=(5, 3.4),
      ncols=3,
    ),
    R.Figure(
      "coverage_margin",
      R.Panel(
        kind="scatter",
        over="view.margin",
        xlabel="log2 k* (coverage margin)",
        ylabel="log2 k_peak ({key})",
        diagonal=1.0,
        series=(R.Series(over="settings", x="x", y="y", label="{key}"),),
      ),
      size=(5.5, 4),
    ),
  ),
)


def _reader_claim(
  cid, reader, name, paper_text, statement, fraction, controls, note
) -> dict:
  """A claim on one reader's cell fraction ``derived.<fraction>_<reader>``
  (noise: its bootstrap half-width), held at >= 0.75, partly at >= 0.5, over
  enough cells where retrieval helps the reader."""
  enough_cells = dict(
    metric=f"derived.n_gain_cells_{reader}",
    op=">=",
    value=MIN_GAIN_CELLS,
    why=(
      f"retrieval lifts the {name} reader's accuracy (by >= min_gain over "
      "prior-only) in enough cells to measure a peak and a decline"
    ),
  )
  return dict(
    id=cid,
    statement=f"{statement} ({name} reader)",
    paper_text=paper_text,
    metric=f"derived.{fraction}_{reader}",
    noise=f"derived.{fraction}_{reader}_ci",
    direction="higher",
    held=0.75,
    partly=0.5,
    fmt=".2f",
    requires=[enough_cells],
    controls=controls,
    note=note,
  )


_DECOUPLING_NOTE = (
  "fraction of the cells where retrieval helps the reader (best retrieved "
  "accuracy - prior-only >= min_gain) in which accuracy at k_max is below its "
  "peak by more than decline_tol while Recall@k_max exceeds Recall at the "
  "peak k by at least recall_rise; noise: 95% bootstrap half-width over those "
  "cells. Control: the same fraction with oracle context (only aligned "
  "evidence, the same cells); a reader whose accuracy also declines on "
  "aligned evidence shows a decline that off-direction evidence does not "
  "explain, and the claim is then inconclusive"
)


def _decoupling(cid: str, reader: str, name: str, paper_text: str) -> dict:
  controls = {
    f"oracle context ({name})": (f"derived.decoupling_fraction_{reader}_oracle")
  }
  statement = (
    "recall keeps rising after answer accuracy has peaked and declined"
  )
  return _reader_claim(
    cid,
    reader,
    name,
    paper_text,
    statement,
    "decoupling_fraction",
    controls,
    _DECOUPLING_NOTE,
  )


_BOUNDARY_NOTE = (
  "fraction of the cells where retrieval helps the reader with |log2 k* - "
  "log2 k_peak| <= 1, k* = argmax_k k Delta(k) (reconstruction); noise: "
  "95% bootstrap half-width over those cells. Controls judged by the same "
  "rule: one constant k for all cells (the in-sample median peak), "
  "the grid budget nearest the mean cluster size P / J (what the construction "
  "pins k* to), and one k per (P, J) setting (its in-sample median peak, "
  "blind to the shift): a k* no better than these adds nothing beyond the "
  "cluster size"
)


def _boundary(cid: str, reader: str, name: str, paper_text: str) -> dict:
  controls = {
    "constant k (median peak)": f"derived.constant_k_within_2x_{reader}",
    "cluster size k(P/J)": f"derived.cluster_k_within_2x_{reader}",
    "per-setting k (median peak)": f"derived.setting_k_within_2x_{reader}",
  }
  statement = "the coverage margin's boundary k* predicts the accuracy peak"
  return _reader_claim(
    cid,
    reader,
    name,
    paper_text,
    statement,
    "kstar_within_2x",
    controls,
    _BOUNDARY_NOTE,
  )


_PREDICTION = (
  "falsifiable prediction: recall can keep rising after answer accuracy has "
  "saturated or declined (abstract)"
)

CLAIMS = (
  _decoupling("recall_accuracy_decoupling", "ridge", "ridge", _PREDICTION),
  _decoupling(
    "recall_accuracy_decoupling_gd",
    "gd",
    "one-step GD, fixed step",
    _PREDICTION,
  ),
  _decoupling(
    "recall_accuracy_decoupling_gd_linesearch",
    "gd_ls",
    "one-step GD, line search",
    _PREDICTION,
  ),
  dict(
    id="shuffled_controls_fall_to_prior",
    statement=(
      "shuffled-context controls lose the retrieval gain (gains come from "
      "evidence)"
    ),
    paper_text=(
      "dense top-k sweeps together with oracle and shuffled-context controls "
      "expose this recall--accuracy decoupling (abstract)"
    ),
    metric="derived.shuffled_gain_kept_max",
    direction="lower",
    held=0.2,
    partly=0.4,
    fmt=".2f",
    baselines={"random context": "derived.random_gain_kept_max"},
    note=(
      "(best-k accuracy of the control - prior-only accuracy) / (best-k "
      "retrieved accuracy - prior-only accuracy), "
      "averaged over cells whose retrieved gain is >= min_gain; "
      "the maximum over the readers {GD, GD line search, "
      "ridge} and the controls {labels shuffled, other query's list}"
    ),
  ),
  _boundary(
    "budget_boundary_ridge",
    "ridge",
    "ridge",
    (
      "retrieval is useful only while aligned evidence grows faster than "
      "reader-facing ambiguity (abstract)"
    ),
  ),
  _boundary(
    "budget_boundary_gd",
    "gd",
    "one-step GD, fixed step",
    (
      "a conditional transfer result extends the same budget boundary to "
      "frozen readers (abstract)"
    ),
  ),
)
