"""CPU-scale run (about 10 minutes on 2 busy CPU cores).

  python -m experiments.dense_limits.main --config=experiments/dense_limits/configs/default.py \
      --workdir=runs/dense_limits

E1: the strongly dense class (mean aggregation) at weight bounds B in {1, 4,
16}, the width-unbounded control at the same bounds (the same bounded weights,
summed instead of averaged), sparse fan-in 16 with B = 1 and an unconstrained
MLP x widths {16, 64, 256, 512} (two hidden layers) x 2 Adam learning rates
(times B for the dense class, whose weights live on [-B, B]) x 3 seeds, on a
1-Lipschitz bump target (d = 2, 16 bumps, 4096 points) and on sklearn digits
(1,797 images); the error is the full-batch *train* loss after a fixed number of
steps, best learning rate per width. The plateau claims are judged at every B,
each only where the dense net learns (its widest net at most half the constant
predictor's loss). E2: the trained dense bump nets (widths >= 64) compressed
with K cut terms per hidden layer, against a truncated SVD of equal forward cost
and K random cut terms. E3: Frieze-Kannan residuals of random +-B matrices
against B / sqrt(K); the SDP bracket and the local search against exact
enumeration on small matrices.
"""

import ml_collections

from jaxpapers.core import reporting as R


def get_config():
  c = ml_collections.ConfigDict(
    dict(
      seed=0,
      seeds=3,
      widths=(16, 64, 256, 512),
      depth=2,  # hidden layers
      bound=1.0,  # the sparse class's bound and the dense nets compressed in E2
      # the weight bounds of the dense class and its width-unbounded control
      bounds=BOUNDS,
      fan_in=16,
      classes=("dense", "dense_sum", "sparse", "plain"),
      lrs=(3e-3, 1e-2),
      steps=600,
      batch=128,
      tasks=("bumps", "digits"),
      bump_d=2,
      bump_grid=4,
      n_train=4096,
      n_test=1024,
      # E2
      compress_ks=(1, 2, 4, 8, 16, 32),
      compress_min_width=64,
      compress_restarts=32,
      compress_iters=10,
      # E3
      fk_size=256,
      fk_k=32,
      exact_size=12,
      exact_trials=8,
    )
  )
  c.claims = claims(BOUNDS)
  c.report = REPORT
  return c


_LIP = "metrics.derived.lipschitz"
_TASKS = dict(over="view.tasks", title="{key}", logx=True, logy=True)
# The tables and figures, over experiments.dense_limits.train:report_view.
REPORT = R.Report(
  view="experiments.dense_limits.train:report_view",
  tables=(
    R.Table(
      over="view.rows",
      columns=(
        *R.columns("task={task}; class={label}"),
        R.Column(
          "train loss, width [v]",
          "w.[i].m",
          err="w.[i].s",
          over=("config.widths"),
        ),
        *R.columns("slope (log-log)=slope.m:.3f±slope.s", missing="-"),
      ),
    ),
    R.Table(
      when=_LIP,
      title=(
        "Where the bound binds on the bump target (normalised target "
        f"Lipschitz {{{_LIP}.target:.3g}}; B* = {{{_LIP}.b_star:.3g}})"
      ),
      over="view.bounds",
      columns=R.columns(
        "B={B}; Lipschitz bound of the dense class=bound; binds={binds}; "
        "dense loss, widest=dense; sum, widest=sum"
      ),
    ),
    R.Table(
      when="metrics.derived.compression",
      title=(
        "Relative output error of the compressed dense bump nets (B = "
        "{config.bound:g}, seed mean)"
      ),
      over="view.compression.rows",
      columns=(
        R.Column("method", "{key}"),
        R.Column("K=[v]", "v.[i]", over="metrics.derived.compression.ks"),
      ),
    ),
  ),
  figures=(
    R.Figure(
      "saturation",
      R.Panel(
        **_TASKS,
        xlabel="width",
        ylabel="train loss",
        series=(
          R.Series(over="classes", x="config.widths", y="y", label="{key}"),
        ),
        lines=(R.Line("trivial", label="constant predictor", style="--"),),
      ),
      size=(6, 4.2),
    ),
    R.Figure(
      "bound",
      R.Panel(
        **_TASKS,
        xlabel="weight bound B",
        ylabel="train loss at the widest width",
        series=(
          R.Series(over="bound", x="config.bounds", y="y", label="{key}"),
        ),
        lines=(
          R.Line("plain", label="unconstrained", color="C2", when="plain"),
          R.Line("trivial", label="constant predictor", style="--"),
          R.Line(
            "b_star",
            label="B* (Lipschitz bound = target's)",
            color="k",
            style="-",
            vertical=True,
            when="b_star",
          ),
        ),
      ),
      size=(6, 4.2),
    ),
    R.Figure(
      "compression",
      R.Panel(
        xlabel="K (terms per hidden layer)",
        ylabel="relative output error",
        title="compression of dense bump nets",
        logx=True,
        logy=True,
        series=(
          R.Series(
            over="view.compression.curves",
            x="metrics.derived.compression.ks",
            y=("y"),
            label=("{key}"),
          ),
        ),
      ),
      size=(5.5, 3.8),
      when="metrics.derived.compression",
    ),
  ),
)


BOUNDS = (1.0, 4.0, 16.0)
# The dense net learns when its widest net has at most half the constant
# predictor's train loss: log10(2) decades below it. A flat width curve above
# that is the constant predictor's.
LEARNS = 0.30103


_SLOPE = (
  "slope = d log10(full-batch train loss) / d log10(width) over the widths, "
  "fitted per seed at the learning rate with the lowest seed-mean loss at "
  "each width; noise is the t-based 95% half-width over seeds"
)


def _task_claims(task, what, bounds):
  out = []
  for b in bounds:
    blk = f"derived.{task}.B{b:g}"
    learns = dict(
      metric=f"{blk}.dense_gain_decades",
      op=">=",
      value=LEARNS,
      why=(
        "the widest dense net learns the task (train loss at most half the "
        "constant predictor's), so a flat width curve is not the constant "
        "predictor's"
      ),
    )
    out += [
      dict(
        id=f"dense_plateau_{task}_B{b:g}",
        statement=(
          f"the strongly dense MLP stops improving with width ({what}, "
          f"B = {b:g})"
        ),
        paper_text=(
          "Lipschitz functions that cannot be approximated by such networks "
          "(existential)"
        ),
        metric=f"{blk}.slope_dense",
        noise=f"{blk}.slope_dense_ci95",
        direction="higher",
        held=-0.05,
        partly=-0.15,
        fmt="+.3f",
        requires=[learns],
        controls={
          # The same bounded weights, summed instead of averaged: if it plateaus
          # too, the plateau comes from the bound, the target or the budget, not
          # from density.
          "width-unbounded (sum aggregation, same B)": {
            "metric": f"{blk}.slope_sum",
            "noise": f"{blk}.slope_sum_ci95",
          },
          # Unbounded weights at the same widths: if they plateau too, the
          # target is the limit.
          "unconstrained MLP": {
            "metric": f"derived.{task}.slope_plain",
            "noise": f"derived.{task}.slope_plain_ci95",
          },
        },
        baselines={
          "constant predictor slope": (f"derived.{task}.slope_constant")
        },
        note=(
          "held if the train error falls by less than 11% per 10x width; "
          "the constant predictor (flat by construction, "
          "so it would clear this rule whatever the data) is excluded by the "
          "precondition that the dense net learns; "
        )
        + _SLOPE,
      ),
      dict(
        id=f"others_keep_improving_{task}_B{b:g}",
        statement=(
          "sparse or unconstrained networks improve with width faster than "
          f"the dense one ({what}, B = {b:g})"
        ),
        paper_text=(
          "motivates the use of sparse connectivity as a necessary ingredient"
        ),
        metric=f"{blk}.slope_gap",
        noise=f"{blk}.slope_gap_ci95",
        direction="higher",
        held=0.1,
        partly=0.03,
        fmt="+.3f",
        requires=[learns],
        baselines={
          "slope dense": f"{blk}.slope_dense",
          "slope width-unbounded": f"{blk}.slope_sum",
          "slope sparse": f"derived.{task}.slope_sparse",
          "slope plain": f"derived.{task}.slope_plain",
        },
        note="slope_dense(B) - min(slope_sparse, slope_plain), per seed; "
        + _SLOPE,
      ),
    ]
  return out


def claims(bounds):
  """The claims of a run whose dense class is swept over ``bounds``."""
  return (
    *_task_claims("bumps", "1-Lipschitz bump target, d = 2", bounds),
    *_task_claims("digits", "sklearn digits, train cross-entropy", bounds),
    *_E2_E3,
  )


_E2_E3 = (
  dict(
    id="few_cut_terms",
    statement=(
      "a constrained dense network is well approximated by few cut terms"
    ),
    paper_text=(
      "weak regularity gives a compression of bounded size, "
      "independent of width"
    ),
    metric="derived.compression.cut_err_kmax",
    noise="derived.compression.cut_err_kmax_std",
    direction="lower",
    held=0.1,
    partly=0.3,
    fmt=".3f",
    baselines={
      "truncated SVD, equal cost": "derived.compression.svd_err_kmax",
      "random cut terms": "derived.compression.random_err_kmax",
      "constant output": "derived.compression.constant_err",
    },
    note=(
      "relative output error RMS(f_K - f) / RMS(f - mean f) on test inputs at "
      "the largest K, mean over seeds of the widest trained dense bump net (B "
      "= 1); noise: std over seeds"
    ),
  ),
  dict(
    id="cut_beats_random_terms",
    statement=(
      "cut terms found by the weak-regularity search beat the same number of "
      "random ones"
    ),
    paper_text="(baseline check)",
    metric="derived.compression.random_over_cut_kmax",
    direction="higher",
    held=2.0,
    partly=1.2,
    fmt=".2f",
    note="error ratio random / cut at the largest K, widest net, seed mean",
  ),
  dict(
    id="cut_matches_svd",
    statement=(
      "cut terms compress as well as a truncated SVD of equal forward cost"
    ),
    paper_text="(the obvious alternative; not a claim of the paper)",
    metric="derived.compression.cut_over_svd_kmax",
    direction="lower",
    held=1.0,
    partly=2.0,
    fmt=".2f",
    note="error ratio cut / SVD at the largest K, widest net, seed mean",
  ),
  dict(
    id="compression_width_independent",
    statement="the compression error at fixed K does not grow with width",
    paper_text="compressed size independent of the width",
    metric="derived.compression.width_ratio_kmax",
    direction="lower",
    held=1.25,
    partly=2.0,
    fmt=".2f",
    note=(
      "cut error at the largest K, widest / narrowest compressed width, "
      "seed means"
    ),
  ),
  dict(
    id="fk_bound",
    statement=(
      "after K greedy steps some residual has cut norm <= B / sqrt(K) "
      "(Frieze-Kannan)"
    ),
    paper_text=(
      "weak regularity lemma (a theorem; a check of the implementation)"
    ),
    metric="derived.regularity.min_found_over_bound",
    direction="lower",
    held=1.0,
    fmt=".3f",
    note=(
      "min over steps of the cut found, over B / sqrt(K), random +-B matrices"
    ),
  ),
)
