"""Likely mistakes in the claim code are caught by the claim-code tests.

Each :class:`Mutation` names a module, a source snippet that occurs exactly once
in it, the snippet's broken replacement (a swapped sign, best <-> worst, ln <->
log10, mean <-> median, an off-by-one slice, a swapped operand, ...) and the
tests of ``tests/claims/`` that must catch it. The test compiles the mutated
source into a fresh module object (the real module is left untouched), runs the
named tests against it and asserts that at least one fails. A snippet that no
longer occurs exactly once fails loudly, so a refactor of the claim code must
update this list rather than silently leave a mistake untested.

A test function of ``tests/claims/test_<paper>_claim_code.py`` takes the module
it checks as its only argument, named by a key of that file's ``MODULES``
(``train``, ``e4``, ...). When a test checks a module other than the mutated one
(``search`` calls ``train``), that module is rebuilt from its source with the
mutant in place of its import.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import keyword
import pathlib
import sys
import tokenize
import types
import warnings

import pytest


@dataclasses.dataclass(frozen=True)
class Mutation:
  paper: str
  module: str  # dotted module name
  old: str  # occurs exactly once in the module's source
  new: str
  # test functions of tests/claims/test_<paper>_claim_code.py
  tests: tuple[str, ...]
  what: str

  @property
  def id(self) -> str:
    return f"{self.paper}: {self.what}"


def M(paper, module, old, new, tests, what):
  """A row; ``module`` is relative to ``experiments.<paper>`` unless it is a
  dotted name."""
  name = module if "." in module else f"experiments.{paper}.{module}"
  return Mutation(paper, name, old, new, tuple(tests), what)


MUTATIONS = (
  # --------------------------------------------------------------- bayes_memory
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    "acc[a][i].mean() - max(acc[m][i].mean() for m in BASELINE_RETRIEVERS)",
    "acc[a][i].mean() - min(acc[m][i].mean() for m in BASELINE_RETRIEVERS)",
    ["test_gain_against_best_retriever"],
    "compares against the worst retriever instead of the best",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    'gain("acc_gain_gated_vs_ungated", minus("distilled_gated", "distilled"))',
    'gain("acc_gain_gated_vs_ungated", minus("distilled", "distilled_gated"))',
    ["test_gated_minus_ungated"],
    "gated minus ungated with the operands swapped",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    '"read_fraction": {m: float((col[m] != 0).mean()) for m in col},',
    '"read_fraction": {m: float((col[m][P] != 0).mean()) for m in col},',
    ["test_read_fraction_is_over_all_questions"],
    "read fraction over the preference questions only",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    'den = acc["oracle_bf"][i].mean() - acc["no_memory"][i].mean()',
    'den = acc["oracle_bf"][i].mean()',
    ["test_distilled_gain_ratio"],
    "gain ratio without subtracting the no-memory accuracy",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    "lo, hi = np.percentile(vals, [2.5, 97.5])\n  return float((hi - lo) / 2)",
    "lo, hi = np.percentile(vals, [2.5, 97.5])\n  return float(hi - lo)",
    ["test_boot_ci_is_half_the_central_95_percent_range"],
    "bootstrap interval: full width instead of half-width",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    '"oracle_bf": 2 + np.argmax(lbf, axis=1),',
    '"oracle_bf": 2 + np.argmin(lbf, axis=1),',
    ["test_choose_contexts"],
    "oracle Bayes factor picks the worst turn",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    (
      'plc = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, '
      '1:2]\n  col["oracle_bf_placebo_gated"]'
    ),
    (
      'plc = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, '
      ':1]\n  col["oracle_bf_placebo_gated"]'
    ),
    ["test_choose_contexts"],
    "placebo gate measured against no memory instead of the placebo note",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    'gain(f"acc_gain_greedy_vs_{other}", minus("oracle_bf_greedy", other))',
    'gain(f"acc_gain_greedy_vs_{other}", minus(other, "oracle_bf_greedy"))',
    ["test_greedy_gains"],
    "greedy gains with the operands swapped",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    'gold_ok = q["lp_y"][P, 2 + gold] > q["lp_alt"][P, 2 + gold]',
    'gold_ok = q["lp_y"][P, 1 + gold] > q["lp_alt"][P, 1 + gold]',
    ["test_gold_turn_accuracy_reads_the_gold_column_of_preference_questions"],
    "gold-turn accuracy read one context column early",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    (
      'out["accuracy_gold_turn_lo"] = out["accuracy_gold_turn"] - '
      'out["accuracy_gold_turn_ci"]'
    ),
    (
      'out["accuracy_gold_turn_lo"] = out["accuracy_gold_turn"] + '
      'out["accuracy_gold_turn_ci"]'
    ),
    ["test_gold_turn_accuracy_reads_the_gold_column_of_preference_questions"],
    "reader precondition reads the upper end of the gold-turn interval",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    'out["min_seed"] = int(np.min(q["seed"]))',
    'out["min_seed"] = int(q["seed"][0])',
    ["test_registered_quantities_are_recorded"],
    "fresh-seed precondition reads the first question's seed",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    'out["best_retriever_accuracy"] = out["accuracy"][out["best_retriever"]]',
    (
      'out["best_retriever_accuracy"] = min(out["accuracy"][m] for m in '
      "BASELINE_RETRIEVERS)"
    ),
    ["test_best_retriever_accuracy_is_shown_beside_the_gain"],
    "the displayed retriever accuracy is the worst retriever's",
  ),
  M(
    "bayes_memory",
    "jaxpapers.bayes_memory._evaluate",
    (
      'out["best_retriever"] = max(BASELINE_RETRIEVERS, key=lambda m: '
      'out["accuracy"][m])'
    ),
    (
      'out["best_retriever"] = min(BASELINE_RETRIEVERS, key=lambda m: '
      'out["accuracy"][m])'
    ),
    [
      "test_gain_against_best_retriever",
      "test_best_retriever_accuracy_is_shown_beside_the_gain",
    ],
    "the named best retriever is the worst one",
  ),
  # --------------------------------------------------------------- dense_limits
  M(
    "dense_limits",
    "train",
    "return float(np.polyfit(lw, ys, 1)[0])",
    "return float(np.polyfit(lw, ys, 1)[1])",
    ["test_the_constant_predictors_width_slope_is_zero"],
    "the constant predictor's intercept taken for its slope",
  ),
  M(
    "dense_limits",
    "train",
    "lw = np.log10(np.asarray(cfg.widths, np.float64))",
    "lw = np.log(np.asarray(cfg.widths, np.float64))",
    ["test_slopes_are_log10_log10", "test_task_derived"],
    "width slope with ln(width) instead of log10(width)",
  ),
  M(
    "dense_limits",
    "train",
    "gap = slopes[dense] - np.min(np.stack(others), axis=0)",
    "gap = slopes[dense] - np.max(np.stack(others), axis=0)",
    ["test_task_derived"],
    "slope gap against the flatter (worst) other class instead of the steeper",
  ),
  M(
    "dense_limits",
    "train",
    "best = int(np.argmin(np.nan_to_num(train.mean(1), nan=np.inf)))",
    "best = int(np.argmax(np.nan_to_num(train.mean(1), nan=-np.inf)))",
    ["test_lr_grid_summary_picks_lowest_seed_mean"],
    "learning rate with the highest train loss",
  ),
  M(
    "dense_limits",
    "train",
    "train = np.asarray(train_final).reshape(len(lrs), cfg.seeds)",
    "train = np.asarray(train_final).reshape(cfg.seeds, len(lrs)).T",
    ["test_lr_grid_summary_picks_lowest_seed_mean"],
    "runs read seed-major instead of learning-rate major",
  ),
  M(
    "dense_limits",
    "train",
    (
      'blk["dense_gain_decades"] = float(np.log10(trivial / '
      "max(widest[dense], 1e-12)))"
    ),
    (
      'blk["dense_gain_decades"] = float(np.log(trivial / max(widest[dense], '
      "1e-12)))"
    ),
    ["test_task_derived"],
    (
      "dense net's gain over the constant predictor in ln instead of log10 "
      "(decades)"
    ),
  ),
  M(
    "dense_limits",
    "train",
    (
      'blk["dense_gain_decades"] = float(np.log10(trivial / '
      "max(widest[dense], 1e-12)))"
    ),
    (
      'blk["dense_gain_decades"] = float(np.log10(max(widest[dense], '
      "1e-12) / trivial))"
    ),
    ["test_task_derived"],
    "dense net's gain over the constant predictor inverted",
  ),
  M(
    "dense_limits",
    "train",
    '"best_lr": float(lrs[best]),',
    '"best_lr": float(cfg.lrs[best]),',
    ["test_lr_grid_summary_reports_the_learning_rates_used"],
    "best learning rate reported from the unscaled grid",
  ),
  M(
    "dense_limits",
    "train",
    'scale = bound if cls == "dense" else 1.0',
    'scale = bound if cls != "plain" else 1.0',
    ["test_class_names_bounds_and_learning_rates"],
    "learning rates scaled by B for the width-unbounded control too",
  ),
  M(
    "dense_limits",
    "jaxpapers.dense_limits._theory",
    "p = depth + 1",
    "p = depth",
    ["test_lipschitz_summary"],
    "Lipschitz bound of the dense class with one factor B too few",
  ),
  M(
    "dense_limits",
    "jaxpapers.dense_limits._theory",
    '"binds": {k: v < lip for k, v in bound.items()},',
    '"binds": {k: v > lip for k, v in bound.items()},',
    ["test_lipschitz_summary"],
    "the bound said to bind where it does not",
  ),
  M(
    "dense_limits",
    "train",
    'dense, total = bounded("dense", b), bounded("dense_sum", b)',
    'dense, total = bounded("dense", b), bounded("dense_sum", cfg.bounds[0])',
    ["test_task_derived"],
    "width-unbounded control read at another bound than the claim's",
  ),
  M(
    "dense_limits",
    "train",
    'cut_k = np.array(errs[wmax]["cut"])[:, -1]',
    'cut_k = np.array(errs[wmax]["cut"])[:, -2]',
    ["test_compression_derived"],
    "cut error at the second-largest K (off by one)",
  ),
  M(
    "dense_limits",
    "train",
    (
      'c["cut_over_svd_kmax"] = c["cut_err_kmax"] / max(c["svd_err_kmax"], '
      "1e-12)"
    ),
    (
      'c["cut_over_svd_kmax"] = c["svd_err_kmax"] / max(c["cut_err_kmax"], '
      "1e-12)"
    ),
    ["test_compression_derived"],
    "cut / SVD ratio inverted",
  ),
  M(
    "dense_limits",
    "jaxpapers.dense_limits._theory",
    "fk_bound = bound / math.sqrt(k)",
    "fk_bound = bound / k",
    ["test_regularity_summary"],
    "weak-regularity bound B / K instead of B / sqrt(K)",
  ),
  M(
    "dense_limits",
    "jaxpapers.dense_limits._theory",
    '"min_found_over_bound": float(found.min() / fk_bound)',
    '"min_found_over_bound": float(found.max() / fk_bound)',
    ["test_regularity_summary"],
    "largest instead of smallest cut found",
  ),
  # ---------------------------------------------------------------- cs_clip
  M(
    "cs_clip",
    "evaluate",
    (
      'put("cs_ht_relation", item_seed_interval(x(wi, "cs_ft", '
      '"ht_relation"), n_boot=n_boot))'
    ),
    (
      'put("cs_ht_relation", item_seed_interval(x(wi, "clip_ft", '
      '"ht_relation"), n_boot=n_boot))'
    ),
    ["test_the_cs_models_own_accuracy_for_the_chance_guard"],
    "the chance guard reads the control's accuracy instead of the CS model's",
  ),
  M(
    "cs_clip",
    "evaluate",
    'iv = item_seed_interval(x(wi, "cs_ft", m), x(wi, ref, m), n_boot=n_boot)',
    'iv = item_seed_interval(x(wi, ref, m), x(wi, "cs_ft", m), n_boot=n_boot)',
    ["test_derived_metrics"],
    "reference minus CS instead of CS minus reference",
  ),
  M(
    "cs_clip",
    "evaluate",
    'return sorted(rs, key=lambda r: r["seed"])',
    "return sorted(rs, key=lambda r: 0)",
    [
      "test_summarize_and_items_order_every_model_by_seed",
      "test_derived_metrics",
    ],
    "runs not ordered by seed (pairs broken)",
  ),
  M(
    "cs_clip",
    "jaxpapers.cs_clip._stats",
    "mean = float(np.mean(a - b))",
    "mean = float(np.median(a - b))",
    ["test_item_interval_takes_the_wider_noise"],
    "median over seeds and items instead of the mean",
  ),
  M(
    "cs_clip",
    "jaxpapers.cs_clip._stats",
    '"half_width": float(np.max([item_h, seed_h])),',
    '"half_width": float(np.min([item_h, seed_h])),',
    ["test_item_interval_takes_the_wider_noise"],
    "the narrower of the item and seed half-widths",
  ),
  M(
    "cs_clip",
    "jaxpapers.cs_clip._stats",
    "item_h = float(max(boot.estimate - boot.lo, boot.hi - boot.estimate))",
    "item_h = float(boot.hi - boot.estimate)",
    ["test_item_interval_is_symmetric_by_its_wider_side"],
    "bootstrap half-width from its upper side only",
  ),
  M(
    "cs_clip",
    "jaxpapers.cs_clip._stats",
    (
      "boot = core_stats.paired_bootstrap(a.mean(0), b.mean(0), "
      "n_resamples=n_boot, seed=seed)"
    ),
    (
      "boot = core_stats.paired_bootstrap(a.mean(1), b.mean(1), "
      "n_resamples=n_boot, seed=seed)"
    ),
    ["test_item_interval_when_only_items_vary"],
    "bootstrap over seeds instead of items (axes swapped)",
  ),
  M(
    "cs_clip",
    "jaxpapers.cs_clip._stats",
    (
      "seed_h = float(core_stats.paired_difference(a.mean(1), "
      "b.mean(1)).half_width)"
    ),
    "seed_h = float(core_stats.t_interval(a.mean(1)).half_width)",
    ["test_item_interval_takes_the_wider_noise"],
    "seed interval of the method alone instead of the paired difference",
  ),
  M(
    "cs_clip",
    "evaluate",
    'item_seed_interval(x(oi, "clip_ft", "ht_relation"), ref, n_boot=n_boot)',
    'item_seed_interval(x(oi, "clip", "ht_relation"), ref, n_boot=n_boot)',
    ["test_derived_metrics"],
    "order-aware control read before its plain fine-tuning",
  ),
  M(
    "cs_clip",
    "evaluate",
    'out["baseline_relation_foil_acc_lo"] = foil["mean"] - foil["half_width"]',
    'out["baseline_relation_foil_acc_lo"] = foil["mean"] + foil["half_width"]',
    ["test_the_relation_precondition_reads_the_lower_end"],
    "precondition reads the upper end of the foil-accuracy interval",
  ),
  M(
    "cs_clip",
    "evaluate",
    (
      '0.5 * (seeds_by_items(packed, "r1_i2t", n) + seeds_by_items(packed, '
      '"r1_t2i", n))'
    ),
    'seeds_by_items(packed, "r1_i2t", n)',
    ["test_r1_items_are_the_mean_of_both_directions"],
    "R@1 per scene from image->text only",
  ),
  M(
    "cs_clip",
    "jaxpapers.cs_clip._stats",
    "return np.packbits(x.astype(np.uint8)).tobytes().hex()",
    'return np.packbits(x.astype(np.uint8), bitorder="little").tobytes().hex()',
    ["test_pack_bits_round_trip"],
    "per-item outcomes packed in the other bit order",
  ),
  # ---------------------------------------------------------------- denseam
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    "i0 = int(np.argmin(mean[0])) if np.isfinite(mean[0]).any() else None",
    "i0 = int(np.argmin(mean[-1])) if np.isfinite(mean[0]).any() else None",
    ["test_setting_summary"],
    "learning rate tuned at the largest width instead of the smallest",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    (
      "return float(e.max() / e.min()) if np.all(np.isfinite(e)) else "
      'float("inf")'
    ),
    (
      "return float(e.min() / e.max()) if np.all(np.isfinite(e)) else "
      'float("inf")'
    ),
    ["test_setting_summary"],
    "eta* spread min / max instead of max / min",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    "regret = float(mean[-1, i0] / mean[-1].min() - 1.0)",
    "regret = float(mean[-1, i0] / mean[-1].max() - 1.0)",
    ["test_setting_summary"],
    "regret against the worst learning rate at K_max",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    "return _finite(loss).mean(-1)",
    "return np.nanmean(np.asarray(loss, np.float64), -1)",
    ["test_a_diverged_seed_never_wins"],
    "a diverged seed dropped from the seed mean instead of making it inf",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    'a = _finite(np.asarray(sp["best_loss_per_seed"], np.float64)[-1])',
    'a = _finite(np.asarray(sp["best_loss_per_seed"], np.float64)[0])',
    ["test_derived_metrics"],
    "best-loss ratio at the smallest width instead of the largest",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    '"log_drift": log_drift(eta_seed[-1], eta_seed[0]),',
    '"log_drift": log_drift(eta_seed[0], eta_seed[-1]),',
    ["test_summary_edges_learning_and_drift"],
    "drift of the optimum taken smallest over largest width (sign flipped)",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    "r = stats.log_ratio_interval(a, b)\n  return {",
    "r = stats.log_ratio_interval(np.exp(a), np.exp(b))\n  return {",
    ["test_log_drift"],
    (
      "drift on the linear scale (a difference of optima) instead of the "
      "log-ratio"
    ),
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    (
      "unbracketed = (seed_i == 0) | (seed_i == len(lrs) - 1) | "
      "~np.isfinite(best_seed)"
    ),
    (
      "unbracketed = (seed_i == 0) | (seed_i == len(lrs)) | "
      "~np.isfinite(best_seed)"
    ),
    ["test_summary_edges_learning_and_drift"],
    "an optimum on the grid's upper edge counted as bracketed (off by one)",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    (
      "learns = bool(np.all(np.isfinite(mean.min(axis=1)) & (mean.min(axis=1) "
      "< math.log(10))))"
    ),
    (
      "learns = bool(np.any(np.isfinite(mean.min(axis=1)) & (mean.min(axis=1) "
      "< math.log(10))))"
    ),
    ["test_summary_edges_learning_and_drift"],
    "a setting that learns at one width counted as learning at every width",
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    """    if not s["learns_at_every_width"]:
      absd = float("inf")""",
    """    if False:
      absd = float("inf")""",
    ["test_derived_metrics"],
    (
      "a setting that does not learn gets a finite drift (a vacuous control "
      "passes)"
    ),
  ),
  M(
    "denseam",
    "jaxpapers.denseam._summary",
    "      absd = abs(m)",
    "      absd = m",
    ["test_derived_metrics"],
    "signed drift judged as a two-sided tolerance (a shrinking optimum passes)",
  ),
  # ---------------------------------------------------------------- dual_rate
  M(
    "dual_rate",
    "jaxpapers.dual_rate._fdproxy",
    '"compared": ("heldout", num_samples, 2 * num_samples),',
    '"compared": ("heldout", 0, num_samples),',
    ["test_fd_splits"],
    "the floor compares the reference split with itself",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._fdproxy",
    'need = 2 * num_samples if reference == "heldout" else num_samples',
    "need = num_samples",
    ["test_fd_splits"],
    "a held-out split too small for two disjoint splits accepted",
  ),
  M(
    "dual_rate",
    "evaluate",
    (
      'out["floor_is_heldout"] = float(heldout is not None and '
      'fl.get("splits") == heldout)'
    ),
    'out["floor_is_heldout"] = float(fl.get("reference") == "heldout")',
    ["test_floor_is_heldout"],
    "a held-out floor of another size than the samples accepted",
  ),
  M(
    "dual_rate",
    "evaluate",
    '"compared": ["heldout", n, 2 * n]} if n else None',
    '"compared": ["heldout", 0, n]} if n else None',
    ["test_floor_is_heldout"],
    "a floor comparing the reference split with itself accepted",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    'best = min(base_rows, key=lambda r: r["fd_mean"])',
    'best = max(base_rows, key=lambda r: r["fd_mean"])',
    ["test_headline_matched_quality", "test_derived_metrics"],
    "matched quality set by the worst baseline row",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    'target = best["fd_mean"] + best["fd_std"]',
    'target = best["fd_mean"] - best["fd_std"]',
    ["test_headline_matched_quality"],
    "matched-quality target below the best baseline instead of above",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    (
      '"flop_reduction_at_matched_quality": (cb["mflops_per_sample"] / '
      'cd["mflops_per_sample"])'
    ),
    (
      '"flop_reduction_at_matched_quality": (cd["mflops_per_sample"] / '
      'cb["mflops_per_sample"])'
    ),
    ["test_headline_matched_quality", "test_derived_metrics"],
    "FLOP reduction inverted",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    (
      'cd = cheapest(lambda r: r["method"] in dual_methods and '
      '(r["interval_K"] or 0) > 1)'
    ),
    (
      'cd = cheapest(lambda r: r["method"] in dual_methods and '
      '(r["interval_K"] or 0) >= 1)'
    ),
    ["test_headline_ignores_dual_rate_k1"],
    "dual-rate K = 1 allowed to meet the target",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    'return (worse["fd_mean"] - better["fd_mean"]) / noise',
    'return (better["fd_mean"] - worse["fd_mean"]) / noise',
    ["test_gain_in_std_sign", "test_derived_metrics"],
    "gain in std with the sign flipped",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    'gains.append(gain_in_std(min(cand, key=lambda c: c["fd_mean"]), r))',
    'gains.append(gain_in_std(max(cand, key=lambda c: c["fd_mean"]), r))',
    ["test_gains_over_rows"],
    "equal-cost gain against the worst competitor",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    "return float(np.median(values)) if values else None",
    "return float(np.mean(values)) if values else None",
    ["test_gains_over_rows"],
    "mean over rows instead of the median",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    "fd_std=float(np.std(fds)),",
    'fd_std=float(np.mean([r["fd_std"] for r in rs])),',
    ["test_aggregate_rows_over_training_seeds"],
    "training-seed std replaced by the mean sampling std",
  ),
  # ---------------------------------------------------------- evidence_coverage
  M(
    "evidence_coverage",
    "jaxpapers.evidence_coverage._budget",
    "p = int(np.argmax(a))",
    "p = int(np.argmin(a))",
    ["test_decline"],
    "recall rise measured from the worst k instead of the peak",
  ),
  M(
    "evidence_coverage",
    "jaxpapers.evidence_coverage._budget",
    'return int(ks[int(np.argmax(_curve(acc, "acc", len(ks))))])',
    'return int(ks[int(np.argmin(_curve(acc, "acc", len(ks))))])',
    ["test_k_peak"],
    "peak budget at the lowest accuracy",
  ),
  M(
    "evidence_coverage",
    "evaluate",
    "gc = [c for c in cells if _gain(c, r) >= min_gain]",
    "gc = list(cells)",
    ["test_derived_metrics"],
    (
      "claim fractions over every cell instead of those where retrieval helps "
      "the reader"
    ),
  ),
  M(
    "evidence_coverage",
    "evaluate",
    "return int(2 ** np.round(np.median([np.log2(k) for k in peaks])))",
    "return int(2 ** np.round(np.mean([np.log2(k) for k in peaks])))",
    ["test_derived_metrics"],
    "constant-k baseline from the mean instead of the median peak",
  ),
  M(
    "evidence_coverage",
    "jaxpapers.evidence_coverage._budget",
    "np.abs(np.log2(k) - np.log2(n_pool / n_clusters))",
    "np.abs(k - n_pool / n_clusters)",
    ["test_cluster_k_is_nearest_in_log2"],
    "cluster-size budget nearest on the linear instead of the log2 scale",
  ),
  M(
    "evidence_coverage",
    "evaluate",
    "_hits(gc, r, lambda c: per_setting[_setting(c)])",
    "_hits(gc, r, lambda c: med)",
    ["test_derived_metrics"],
    "per-setting budget control replaced by the one global constant",
  ),
  M(
    "evidence_coverage",
    "evaluate",
    (
      'dec_o = [E.decoupled(c[r]["oracle"]["acc"], c["recall"], '
      "**tols) for c in gc]"
    ),
    (
      'dec_o = [E.decoupled(c[r]["retrieved"]["acc"], c["recall"], '
      "**tols) for c in gc]"
    ),
    ["test_derived_metrics"],
    "oracle control computed on the retrieved curve",
  ),
  M(
    "evidence_coverage",
    "evaluate",
    (
      'kept = [(max(c[r][ctrl]["acc"]) - c["prior"]["acc"]) / _gain(c, '
      "r) for c in gc]"
    ),
    'kept = [max(c[r][ctrl]["acc"]) / _gain(c, r) for c in gc]',
    ["test_derived_metrics"],
    "control gain without subtracting the prior-only accuracy",
  ),
  M(
    "evidence_coverage",
    "evaluate",
    "return abs(np.log2(a) - np.log2(b)) <= 1.0 + 1e-9",
    "return abs(np.log(a) - np.log(b)) <= 1.0 + 1e-9",
    ["test_within_2x", "test_derived_metrics"],
    "within 2x measured in ln instead of log2",
  ),
  # ---------------------------------------------------------------- flashssm3d
  M(
    "flashssm3d",
    "evaluate",
    'best = max(triv) if direction == "higher" else min(triv)',
    'best = min(triv) if direction == "higher" else max(triv)',
    ["test_slack_over_trivial", "test_derived_metrics"],
    "slack over the worst trivial predictor instead of the best",
  ),
  M(
    "flashssm3d",
    "evaluate",
    "return float(np.clip((ref - x) / max(abs(ref), 1e-12), -10.0, 10.0))",
    "return float(np.clip((x - ref) / max(abs(ref), 1e-12), -10.0, 10.0))",
    ["test_gain", "test_derived_metrics"],
    "error gain with the sign flipped",
  ),
  M(
    "flashssm3d",
    "evaluate",
    (
      'gap = min(_gain(ev["vs_gt"][k], t[k], dr) / m + 1.0 for k, dr, '
      "m in CLAIM_METRICS)"
    ),
    (
      'gap = min(_gain(t[k], ev["vs_gt"][k], dr) / m + 1.0 for k, dr, '
      "m in CLAIM_METRICS)"
    ),
    ["test_derived_metrics"],
    "teacher over student instead of student over teacher",
  ),
  M(
    "flashssm3d",
    "evaluate",
    (
      "return float(np.mean([_gain(a[k], b[k], d) / m for k, d, "
      "m in CLAIM_METRICS]))"
    ),
    (
      "return float(np.median([_gain(a[k], b[k], d) / m for k, d, "
      "m in CLAIM_METRICS]))"
    ),
    ["test_derived_metrics", "test_scan_order_derived"],
    "median instead of the mean over the metrics",
  ),
  M(
    "flashssm3d",
    "evaluate",
    'd["derived/alternating_vs_best_single"] = float(min(vs))',
    'd["derived/alternating_vs_best_single"] = float(max(vs))',
    ["test_scan_order_derived"],
    "alternating order against the weaker single order",
  ),
  M(
    "flashssm3d",
    "evaluate",
    'min(ev[k] / max(base[k], 1e-12) for k in ("AUC@30", "depth_delta1.25"))',
    'max(ev[k] / max(base[k], 1e-12) for k in ("AUC@30", "depth_delta1.25"))',
    ["test_derived_metrics"],
    "extrapolation retains the better metric instead of the worse",
  ),
  M(
    "flashssm3d",
    "evaluate",
    'out[f"{k}/std"] = float(np.std(vals, ddof=1))',
    'out[f"{k}/std"] = float(np.std(vals))',
    ["test_aggregate_over_seeds"],
    "population std over seeds instead of the sample std",
  ),
  M(
    "flashssm3d",
    "scaling",
    (
      'out["derived/ssm_minus_attention_exponent"] = a["time_exponent"] - '
      'b["time_exponent"]'
    ),
    (
      'out["derived/ssm_minus_attention_exponent"] = b["time_exponent"] - '
      'a["time_exponent"]'
    ),
    ["test_scaling_metrics"],
    "attention minus SSM exponent",
  ),
  # ---------------------------------------------------------------- goskills
  M(
    "goskills",
    "train",
    "for seed in range(cfg.seed, cfg.seed + cfg.seeds):\n    vals = [",
    "for seed in range(cfg.seeds):\n    vals = [",
    ["test_per_seed_means", "test_derived_metrics"],
    "seeds counted from 0 instead of cfg.seed",
  ),
  M(
    "goskills",
    "train",
    (
      'pair(f"steps_saving_vs_gos_B{bh}", "goskills", "gos_bundle", bh, '
      '"steps", sign=-1.0)'
    ),
    'pair(f"steps_saving_vs_gos_B{bh}", "goskills", "gos_bundle", bh, "steps")',
    ["test_derived_metrics"],
    "steps saved with the sign flipped",
  ),
  M(
    "goskills",
    "train",
    "triv = np.maximum(",
    "triv = np.minimum(",
    ["test_derived_metrics"],
    "trivial coverage from the worse of random and popular",
  ),
  M(
    "goskills",
    "train",
    'ratio = _per_seed(cfg, cells, m, int(b), "coverage") / la',
    'ratio = la / _per_seed(cfg, cells, m, int(b), "coverage")',
    ["test_derived_metrics"],
    "coverage ratio inverted",
  ),
  M(
    "goskills",
    "train",
    'where=lambda c: c["decoy_rate"] == max(cfg.decoy_rate)',
    'where=lambda c: c["decoy_rate"] == min(cfg.decoy_rate)',
    ["test_derived_metrics"],
    "avoid gain at the smallest decoy rate",
  ),
  M(
    "goskills",
    "train",
    'pair(f"ladder_{step}_{k}_gain_B{bud}", hi, lo, bud, k)',
    'pair(f"ladder_{step}_{k}_gain_B{bud}", lo, hi, bud, k)',
    ["test_derived_metrics"],
    "ladder gains as the step before minus the step after",
  ),
  M(
    "goskills",
    "train",
    "zip(LADDER_STEPS, zip(LADDER[:-1], LADDER[1:]))",
    "zip(LADDER_STEPS, zip(LADDER[:1] * 5, LADDER[1:]))",
    ["test_derived_metrics"],
    "every ladder step compared with plain flat instead of the step before",
  ),
  M(
    "goskills",
    "train",
    (
      'pair(f"cov_gain_vs_flat_bottleneck_B{bs}", "goskills", '
      '"flat_bottleneck", bs, "coverage")'
    ),
    (
      'pair(f"cov_gain_vs_flat_bottleneck_B{bs}", "goskills", "flat", bs, '
      '"coverage")'
    ),
    ["test_derived_metrics"],
    "coverage claim judged against plain flat instead of the matched control",
  ),
  M(
    "goskills",
    "train",
    '"goskills", "gos_bottleneck", bh, "steps", sign=-1.0',
    '"goskills", "gos_bottleneck", bh, "steps", sign=1.0',
    ["test_derived_metrics"],
    "steps saved over the matched GoS control with the sign flipped",
  ),
  M(
    "goskills",
    "train",
    (
      'pair(f"roles_success_gain_vs_start_only_B{bh}", "goskills", '
      '"start_only", bh, "success")'
    ),
    (
      'pair(f"roles_success_gain_vs_start_only_B{bh}", "goskills", '
      '"no_roles", bh, "success")'
    ),
    ["test_derived_metrics"],
    "roles judged against the score-order list that also loses START",
  ),
  M(
    "goskills",
    "train",
    '(("goskills", ""), ("flat_bottleneck", "flat_bottleneck_"))',
    '(("flat_bottleneck", ""), ("goskills", "flat_bottleneck_"))',
    ["test_derived_metrics"],
    "the control's load-all ratio swapped with GoSkills'",
  ),
  M(
    "goskills",
    "jaxpapers.goskills._controls",
    "rest = np.where(flat_ids == root[:, None], -1, flat_ids)",
    "rest = flat_ids.copy()",
    ["test_root_first"],
    "the START skill listed twice in flat_root",
  ),
  M(
    "goskills",
    "jaxpapers.goskills._controls",
    "return ids, np.where(roles == START, START, NO_ROLE), np.full(",
    "return ids, roles, np.full(",
    ["test_start_only"],
    "start_only keeps the SUPPORT/CHECK labels",
  ),
  M(
    "goskills",
    "jaxpapers.goskills._controls",
    "(p >= 0) & (p != st)",
    "(p >= 0)",
    ["test_pool_bottleneck_by_hand"],
    "the START skill a second candidate in the pool",
  ),
  M(
    "goskills",
    "jaxpapers.goskills._benchmark",
    "return cfg.plan_size * (1 + cfg.max_support + cfg.max_check)",
    "return cfg.plan_size * (1 + cfg.max_support)",
    ["test_pool_size"],
    "the control's pool smaller than GoSkills' (CHECK slots left out)",
  ),
  # ---------------------------------------------------------------- lanr
  M(
    "lanr",
    "evaluate",
    "return _auroc(-np.asarray(h), sufficient)",
    "return _auroc(np.asarray(h), sufficient)",
    ["test_entropy_auroc_rewards_low_entropy"],
    "sufficiency AUROC of high instead of low entropy",
  ),
  M(
    "lanr",
    "evaluate",
    '"recall_multihop": agg(m, "recall", hops >= 2),',
    '"recall_multihop": agg(m, "recall", hops > 2),',
    ["test_aggregate_methods", "test_claim_values"],
    "multi-hop recall without the 2-hop questions",
  ),
  M(
    "lanr",
    "evaluate",
    'calls = per_question(per_seed, "entropy_control", "calls")',
    'calls = per_question(per_seed, "fixed", "calls")',
    ["test_claim_values"],
    "calls saved by the fixed method instead of the controlled one",
  ),
  M(
    "lanr",
    "evaluate",
    'paired("em_entropy_control_minus_fixed", em_control, em_fixed)',
    'paired("em_entropy_control_minus_fixed", em_fixed, em_control)',
    ["test_claim_values"],
    "fixed minus controlled accuracy",
  ),
  M(
    "lanr",
    "evaluate",
    'best = max(FROZEN, key=lambda f: np.mean(ref[f]["recall"]))',
    'best = min(FROZEN, key=lambda f: np.mean(ref[f]["recall"]))',
    ["test_claim_values"],
    "trained heads compared with the worse frozen cosine instead of the better",
  ),
  M(
    "lanr",
    "evaluate",
    (
      'out[f"{f}_minus_bm25_iter_multihop_recall"] = float(fr[multi].mean() - '
      "bm[multi].mean())"
    ),
    (
      'out[f"{f}_minus_bm25_iter_multihop_recall"] = float(fr.mean() - '
      "bm[multi].mean())"
    ),
    ["test_claim_values"],
    "frozen-cosine control over every question instead of the multi-hop ones",
  ),
  M(
    "lanr",
    "jaxpapers.lanr._stats",
    (
      "comp = np.where(score[pos][:, None] == score[neg][None, :], 0.5, "
      "comp) * same"
    ),
    "comp = np.where(score[pos][:, None] == score[neg][None, :], 0.5, comp)",
    ["test_auroc_ci_pairs_strata_and_group_bootstrap"],
    "same-documents AUROC counts pairs across strata",
  ),
  M(
    "lanr",
    "jaxpapers.lanr._stats",
    (
      "w = np.stack([np.bincount(r.astype(np.int64), "
      "minlength=G) for r in np.maximum(rows, 0)])"
    ),
    "w = np.ones((rows.shape[0], G))",
    ["test_auroc_ci_pairs_strata_and_group_bootstrap"],
    "AUROC bootstrap ignores which questions were drawn",
  ),
  M(
    "lanr",
    "jaxpapers.lanr._eval",
    (
      'return {"all": float(hit[has].mean()), "hop1": '
      "float(hit[has & (t == 0)].mean())}"
    ),
    (
      'return {"all": float(hit[has].mean()), "hop1": '
      "float(hit[has & (t == 1)].mean())}"
    ),
    ["test_next_hop_accuracy"],
    "first-hop accuracy read at the second hop (off by one)",
  ),
  M(
    "lanr",
    "evaluate",
    (
      "return max(names, key=lambda k: "
      'float(np.mean(np.asarray(ref[k]["recall"], float)[mask])))'
    ),
    (
      "return max(names, key=lambda k: "
      'float(np.mean(np.asarray(ref[k]["recall"], float))))'
    ),
    ["test_better_on_compares_the_masked_questions"],
    (
      "stronger lexical pipeline chosen on every question instead of the "
      "multi-hop ones"
    ),
  ),
  M(
    "lanr",
    "evaluate",
    (
      "rnd = [math.comb(n_docs - h, t_max - h) / math.comb(n_docs, "
      "t_max) for h in hops]"
    ),
    (
      "rnd = [math.comb(n_docs - h, t_max - h) / math.comb(n_docs, "
      "h) for h in hops]"
    ),
    ["test_reference_metrics"],
    "random-documents recall with the wrong binomial denominator",
  ),
  # ---------------------------------------------------------------- leansearch
  M(
    "leansearch",
    "evaluate",
    "best = max(COMPARED, key=lambda b: means[b])",
    "best = min(COMPARED, key=lambda b: means[b])",
    ["test_derived_metrics"],
    "reasoning compared with the worst baseline instead of the best",
  ),
  M(
    "leansearch",
    "evaluate",
    '  "dense",\n  "standard",\n  "dense_flat",',
    '  "standard",\n  "dense_flat",',
    ["test_the_strongest_system_may_be_a_stage_or_an_ablation"],
    (
      "the dense first stage left out of the systems reasoning mode is "
      "compared with"
    ),
  ),
  M(
    "leansearch",
    "evaluate",
    '  "reasoning_first_round",\n  "reasoning_dense",\n)',
    '  "reasoning_first_round",\n)',
    ["test_the_strongest_system_may_be_a_stage_or_an_ablation"],
    "reasoning over the dense stage left out of the comparison",
  ),
  M(
    "leansearch",
    "evaluate",
    (
      'return ("flat", system.removesuffix("_flat")) if '
      'system.endswith("_flat") else ("hier", system)'
    ),
    (
      'return ("hier", system.removesuffix("_flat")) if '
      'system.endswith("_flat") else ("hier", system)'
    ),
    ["test_premise_recall_reads_the_named_variant"],
    "flat-text ablations read from the hierarchical runs",
  ),
  M(
    "leansearch",
    "evaluate",
    (
      'np.subtract(c["hier"]["single"][s]["ndcg"], '
      'c["flat"]["single"][s]["ndcg"])'
    ),
    (
      'np.subtract(c["flat"]["single"][s]["ndcg"], '
      'c["hier"]["single"][s]["ndcg"])'
    ),
    ["test_derived_metrics"],
    "flat minus hierarchical instead of hierarchical minus flat",
  ),
  M(
    "leansearch",
    "evaluate",
    "means = {b: float(r.mean()) for b, r in recall.items()}",
    "means = {b: float(np.median(r)) for b, r in recall.items()}",
    ["test_derived_metrics"],
    (
      "strongest system chosen by its median instead of its mean over all "
      "queries"
    ),
  ),
  M(
    "leansearch",
    "evaluate",
    (
      "return float(1.96 * x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 "
      'else float("nan")'
    ),
    (
      "return float(1.96 * x.std(ddof=1) / len(x)) if len(x) > 1 else "
      'float("nan")'
    ),
    ["test_ci_is_normal_half_width", "test_derived_metrics"],
    "interval divided by n instead of sqrt(n)",
  ),
  M(
    "leansearch",
    "jaxpapers.leansearch._benchmark",
    (
      "s = np.where(valid, scores, -np.inf)\n  return np.argsort(-s, axis=1, "
      'kind="stable")'
    ),
    (
      "s = np.where(valid, scores, -np.inf)\n  return np.argsort(s, axis=1, "
      'kind="stable")'
    ),
    ["test_rank_by_scores_best_first"],
    "ranking worst-first",
  ),
  # ---------------------------------------------------------------- locos
  M(
    "locos",
    "jaxpapers.locos._collapse",
    'adv = min(point[d] for d in baselines) - point["locos"]',
    'adv = point["locos"] - min(point[d] for d in baselines)',
    ["test_advantage", "test_curves_on_the_claim_grid"],
    "LOCOS minus baseline collapse index instead of baseline minus LOCOS",
  ),
  M(
    "locos",
    "jaxpapers.locos._collapse",
    'adv_boot = np.min([ci[d] for d in baselines], axis=0) - ci["locos"]',
    'adv_boot = np.max([ci[d] for d in baselines], axis=0) - ci["locos"]',
    ["test_advantage"],
    "bootstrap advantage over the weakest baseline",
  ),
  M(
    "locos",
    "jaxpapers.locos._collapse",
    '"halfwidth": float(max(adv - lo, hi - adv)),',
    '"halfwidth": float(min(adv - lo, hi - adv)),',
    ["test_advantage"],
    "half-width from the nearer end of the interval",
  ),
  M(
    "locos",
    "jaxpapers.locos._collapse",
    (
      "below = curve <= 0.5 * np.asarray(baseline, "
      "np.float64)\n  return np.where(below.any(0), below.argmax(0), "
      "curve.shape[0])"
    ),
    (
      "below = curve < 0.5 * np.asarray(baseline, "
      "np.float64)\n  return np.where(below.any(0), below.argmax(0), "
      "curve.shape[0])"
    ),
    ["test_collapse_index", "test_advantage"],
    "collapse index misses a score exactly at half the baseline",
  ),
  M(
    "locos",
    "jaxpapers.locos._collapse",
    "claim_ks = [k for k in (claim_ks or ks) if k in ks]",
    "claim_ks = list(ks)",
    ["test_curves_on_the_claim_grid"],
    "claim statistic on the full grid instead of the claim's k values",
  ),
  M(
    "locos",
    "evaluate",
    (
      'rec["collapse_k_advantage"] = min(att) - (ck["locos"] if ck["locos"] '
      "is not None else beyond)"
    ),
    (
      'rec["collapse_k_advantage"] = max(att) - (ck["locos"] if ck["locos"] '
      "is not None else beyond)"
    ),
    ["test_derived_metrics"],
    "toy advantage over the weakest attention detector",
  ),
  M(
    "locos",
    "evaluate",
    'else cv["baseline"]["mean"] - cv["random"]["mean"][-1],',
    'else cv["baseline"]["mean"] - cv["random"]["mean"][-2],',
    ["test_derived_metrics"],
    "random-heads drop at the second-largest k (off by one)",
  ),
  M(
    "locos",
    "evaluate",
    'got = par["locos"][list(par["ks"]).index(filt["claim_grid"][i])]',
    'got = par["locos"][i]',
    ["test_derived_metrics"],
    "parametric recall read at the claim-grid index instead of at its k",
  ),
  M(
    "locos",
    "jaxpapers.locos._collapse",
    'dd = boot_base[None, :] - boot["random"]  # [K, R]',
    'dd = boot["random"] - boot_base[None, :]  # [K, R]',
    ["test_random_drop_is_a_paired_interval_of_baseline_minus_random"],
    "random-heads drop interval of random minus unablated",
  ),
  M(
    "locos",
    "evaluate",
    'adv = float(min(base_idx) - idx["random"])',
    'adv = float(idx["random"] - min(base_idx))',
    ["test_random_guards"],
    "random-heads control advantage with the sign flipped",
  ),
  M(
    "locos",
    "evaluate",
    "i = max(fit, key=lambda j: ks[j])",
    "i = min(fit, key=lambda j: ks[j])",
    ["test_random_guards"],
    (
      "smallest k of the grid instead of the largest within the paper's share "
      "of heads"
    ),
  ),
  M(
    "locos",
    "evaluate",
    "ratios = a[ok] / b[ok]",
    "ratios = b[ok] / a[ok]",
    ["test_parametric_retained_halfwidth"],
    "parametric retained ratio inverted in the bootstrap",
  ),
  M(
    "locos",
    "needle",
    (
      "bi = core.paired_bootstrap(arm[a], arm[b], n_resamples=num_resamples, "
      "seed=seed)"
    ),
    (
      "bi = core.paired_bootstrap(arm[b], arm[a], n_resamples=num_resamples, "
      "seed=seed)"
    ),
    ["test_paired_needle"],
    "long-context paired difference taken the wrong way round",
  ),
  # ---------------------------------------------------------------- logstop
  M(
    "logstop",
    "train",
    "return max(cands, key=lambda a: mean[a]) if cands else None",
    "return min(cands, key=lambda a: mean[a]) if cands else None",
    ["test_compare_arms"],
    "worst arm of each side instead of the best",
  ),
  M(
    "logstop",
    "train",
    "d = [p[a] - p[b] for p in per_seed]",
    "d = [p[b] - p[a] for p in per_seed]",
    ["test_compare_arms"],
    "baseline minus LogSTOP",
  ),
  M(
    "logstop",
    "train",
    "in_w = lambda a, tag=tag: tag in a.split()",
    "in_w = lambda a, tag=tag: True",
    ["test_compare_arms"],
    "same-window comparison across windows",
  ),
  M(
    "logstop",
    "jaxpapers.logstop._windows",
    "counts = np.minimum(w, T - w * np.arange(nb))",
    "counts = w",
    ["test_block_and_sliding_means"],
    "last block divided by the full window",
  ),
  M(
    "logstop",
    "jaxpapers.logstop._windows",
    "hi = np.minimum(np.arange(T) + w, T)",
    "hi = np.minimum(np.arange(T) + w - 1, T)",
    ["test_block_and_sliding_means"],
    "sliding window one frame short",
  ),
  # ---------------------------------------------------------------- margins
  M(
    "margins",
    "jaxpapers.margins._threshold",
    'w["sigmoid" if a - b > tie else "infonce" if b - a > tie else "tie"] += 1',
    'w["infonce" if a - b > tie else "sigmoid" if b - a > tie else "tie"] += 1',
    ["test_loss_wins"],
    "sigmoid and InfoNCE wins swapped",
  ),
  M(
    "margins",
    "train",
    'total = w["sigmoid"] + w["infonce"] + w["tie"]',
    'total = w["sigmoid"] + w["infonce"]',
    ["test_win_fractions"],
    "win fraction leaves out the ties",
  ),
  M(
    "margins",
    "jaxpapers.margins._threshold",
    '"C_half": hit[0] / scale if hit else None,',
    '"C_half": hit[-1] / scale if hit else None,',
    ["test_knee_constants"],
    "largest d reaching half the optimum instead of the smallest",
  ),
  M(
    "margins",
    "train",
    'out["threshold_C_spread"] = max(cs) / min(cs)',
    'out["threshold_C_spread"] = min(cs) / max(cs)',
    ["test_threshold_spread"],
    "constant spread min / max",
  ),
  M(
    "margins",
    "jaxpapers.margins._threshold",
    '"C_median": float(np.median(means)),',
    '"C_median": float(np.mean(means)),',
    ["test_refined_constants"],
    "mean instead of the median constant",
  ),
  M(
    "margins",
    "jaxpapers.margins._dimensions",
    (
      "return float(np.polyfit(np.log10(n), np.log(np.asarray(dims, "
      "np.float64)), 1)[0])"
    ),
    (
      "return float(np.polyfit(np.log(n), np.log(np.asarray(dims, "
      "np.float64)), 1)[0])"
    ),
    ["test_slope_is_ln_d_on_log10_n", "test_dimension_growth"],
    "growth slope on ln N instead of log10 N",
  ),
  M(
    "margins",
    "jaxpapers.margins._dimensions",
    "while i > 0 and r[i - 1] >= f:",
    "while i > 0 and r[i] >= f:",
    ["test_d_needed"],
    "needed dimension scan off by one",
  ),
  M(
    "margins",
    "jaxpapers.margins._dimensions",
    "None if a is None or b is None else a - b",
    "None if a is None or b is None else b - a",
    ["test_dimension_growth", "test_analyse"],
    "slope gap re-solved minus projected",
  ),
  M(
    "margins",
    "e4",
    'out[f"slope_{name}_ci_high"] = mean + ci if ok else None',
    'out[f"slope_{name}_ci_high"] = mean - ci if ok else None',
    ["test_e4_derived_metrics"],
    "upper end of the interval computed as the lower end",
  ),
  M(
    "margins",
    "e4",
    "None if a[-1] is None or b[-1] is None else a[-1] / b[-1]",
    "None if a[0] is None or b[0] is None else a[0] / b[0]",
    ["test_e4_derived_metrics"],
    "dimension ratio at the smallest N instead of the largest",
  ),
  # ---------------------------------------------------------------- mlaire
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    'if abs(mean(A, a, "ndcg") - mean(A, b, "ndcg")) <= ndcg_tie:',
    'if abs(mean(A, a, "ndcg") - mean(A, b, "ndcg")) > ndcg_tie:',
    ["test_derived_metrics", "test_no_tie_gives_zero"],
    "LPR gap over the pairs that do not tie in nDCG",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    'strongest = max(natural, key=lambda r: mean(A, r, "sem_at_1"))',
    'strongest = min(natural, key=lambda r: mean(A, r, "sem_at_1"))',
    ["test_derived_metrics"],
    "semantically weakest retriever instead of the strongest",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._agreement",
    "rx, ry = _average_ranks(x), _average_ranks(y)",
    "rx, ry = x, y",
    ["test_spearman", "test_derived_metrics"],
    "Pearson on the values instead of Spearman on the ranks",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._agreement",
    'return scipy.stats.rankdata(x, method="average", axis=-1) - 1.0',
    'return scipy.stats.rankdata(x, method="ordinal", axis=-1) - 1.0',
    ["test_spearman_with_ties", "test_rank_agreement"],
    "ties broken by position instead of sharing their average rank",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._agreement",
    '"n_discordant": int(np.sum(sx * sy < 0)),',
    '"n_discordant": int(np.sum(sx * sy <= 0)),',
    ["test_rank_agreement"],
    "pairs tied on nDCG counted as reordered",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._agreement",
    "mx, my = np.round(x.mean(1), decimals), np.round(y.mean(1), decimals)",
    "mx, my = x.mean(1), y.mean(1)",
    ["test_rank_agreement_reversal_and_ties"],
    "float noise in the means ranked as an order instead of a tie",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._agreement",
    (
      'out["ci"] = max(out["spearman"] - lo, hi - out["spearman"]) if ok else '
      "nan"
    ),
    (
      'out["ci"] = min(out["spearman"] - lo, hi - out["spearman"]) if ok else '
      "nan"
    ),
    ["test_rank_agreement"],
    "the shorter side of an asymmetric bootstrap interval taken as the noise",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    (
      'names = [r for r in runs[0]["per_query"][v] if r not in '
      "TRIVIAL_RETRIEVERS]"
    ),
    'names = list(runs[0]["per_query"][v])',
    ["test_agreement_metrics"],
    "trivial retrievers ranked with the real ones",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    (
      'vals = [c["lpr_strict"]["mean"] for r, c in summary[pool].items() if r '
      "not in TRIVIAL_RETRIEVERS]"
    ),
    'vals = [c["lpr_strict"]["mean"] for r, c in summary[pool].items()]',
    ["test_lpr_range"],
    "preference range includes the trivial retrievers",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    '"offset_lpr_drop": (A["e5"]["lpr_strict"], A["e5_offset"]["lpr_strict"]),',
    '"offset_lpr_drop": (A["e5_offset"]["lpr_strict"], A["e5"]["lpr_strict"]),',
    ["test_derived_metrics"],
    "offset LPR drop with the operands swapped",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    'for j, lab in enumerate(("SpLp", "SpLm", "SmLp", "SmLm")):',
    'for j, lab in enumerate(("SpLm", "SpLp", "SmLp", "SmLm")):',
    ["test_summarize"],
    "four-way fractions mislabelled",
  ),
  M(
    "mlaire",
    "jaxpapers.mlaire._summary",
    'values_key="values", finite_only=True)',
    'values_key="values", finite_only=False)',
    ["test_summarize"],
    "seeds without a value (NaN) kept in the seed mean",
  ),
  # ---------------------------------------------------------------- msretrieval
  M(
    "msretrieval",
    "evaluate",
    'lh = max(hr, key=lambda k: hr[k]["mean"])',
    'lh = min(hr, key=lambda k: hr[k]["mean"])',
    ["test_derived_metrics", "test_misalignment"],
    "L_H is the objective with the worst HR@1",
  ),
  M(
    "msretrieval",
    "evaluate",
    'se_h = np.sqrt((hr[lh]["std"] ** 2 + hr[lt]["std"] ** 2) / n)',
    'se_h = np.sqrt(hr[lh]["std"] ** 2 + hr[lt]["std"] ** 2)',
    ["test_derived_metrics"],
    "standard error of the HR@1 gap without dividing by the seeds",
  ),
  M(
    "msretrieval",
    "evaluate",
    '"z": float(min(zh, zt))',
    '"z": float(max(zh, zt))',
    ["test_derived_metrics", "test_misalignment"],
    "misalignment from the stronger of the two families",
  ),
  M(
    "msretrieval",
    "evaluate",
    'out[f"misalignment_z_{pool}_shuffled"] = float(np.median(zs))',
    'out[f"misalignment_z_{pool}_shuffled"] = float(np.max(zs))',
    ["test_shuffled_label_control_is_the_median_over_shuffles"],
    (
      "shuffled-label control from the most extreme shuffle instead of the "
      "median"
    ),
  ),
  M(
    "msretrieval",
    "evaluate",
    'zs.append(misalignment(tan, hr_i, n)["z"])',
    'zs.append(misalignment(tan, hr, n)["z"])',
    ["test_shuffled_label_control_is_the_median_over_shuffles"],
    "shuffled-label control computed on the real labels",
  ),
  M(
    "msretrieval",
    "jaxpapers.msretrieval._benchmark",
    "return rng.permuted(stack, axis=-1)",
    "return rng.permuted(stack, axis=1)",
    ["test_shuffled_labels_permute_within_each_pool"],
    "labels shuffled across queries instead of within each pool",
  ),
  M(
    "msretrieval",
    "evaluate",
    'for part, prefix in (("dedup", "toy_"), ("raw", "toy_raw_")):',
    'for part, prefix in (("raw", "toy_"), ("dedup", "toy_raw_")):',
    ["test_derived_metrics"],
    (
      "toy regret claim read from the problems with ties instead of the "
      "deduplicated ones"
    ),
  ),
  M(
    "msretrieval",
    "jaxpapers.msretrieval._toy",
    "return ma - mb, float(np.hypot(ha, hb))",
    "return ma - mb, float(ha + hb)",
    [
      "test_mean_ci_and_difference_of_independent_means",
      "test_toy_set_summary",
    ],
    "half-width of a difference of independent means added linearly",
  ),
  M(
    "msretrieval",
    "jaxpapers.msretrieval._toy",
    "premise = jac.max(1) > (1.0 + np.asarray(smax, np.float64)) / 2 + 1e-6",
    "premise = jac.max(1) > (1.0 + smax) / 2",
    ["test_lemma_check_is_strict_beyond_float32_round_off"],
    "lemma premise met by float32 round-off at equality",
  ),
  M(
    "msretrieval",
    "jaxpapers.msretrieval._toy",
    "mo, ho = mean_ci(ro)",
    "mo, ho = mean_ci(rj)",
    ["test_toy_set_summary"],
    "oracle-decision control read from the Jaccard-Bayes regret",
  ),
  M(
    "msretrieval",
    "jaxpapers.msretrieval._benchmark",
    "same_q = (fp == fps[query][:, None]).all(-1) & (pool != query[:, None])",
    "same_q = (fp == fps[query][:, None]).all(-1)",
    ["test_pool_ties"],
    "a query counted as tied with its own molecule",
  ),
  M(
    "msretrieval",
    "evaluate",
    (
      'trivial = max(base["random"][pool]["hr/random@1"], '
      'base["prior"][pool]["hr/cosine@1"])'
    ),
    (
      'trivial = min(base["random"][pool]["hr/random@1"], '
      'base["prior"][pool]["hr/cosine@1"])'
    ),
    ["test_derived_metrics"],
    "method compared with the weaker trivial predictor",
  ),
  M(
    "msretrieval",
    "jaxpapers.msretrieval._toy",
    "d, dh = diff_of_means_ci(rj[high], rj[low])",
    "d, dh = diff_of_means_ci(rj[low], rj[high])",
    ["test_toy_set_summary"],
    "toy regret low minus high sigma_max",
  ),
  M(
    "msretrieval",
    "evaluate",
    (
      "signs = [1 if pos[x] < pos[y] else -1 for i, "
      "x in enumerate(a) for y in a[i + 1 :]]"
    ),
    (
      "signs = [1 if pos[x] > pos[y] else -1 for i, "
      "x in enumerate(a) for y in a[i + 1 :]]"
    ),
    ["test_kendall", "test_derived_metrics"],
    "Kendall tau with concordant and discordant swapped",
  ),
  # ---------------------------------------------------------------- panda
  M(
    "panda",
    "train",
    (
      "ci95 = lambda v: float(1.96 * np.std(v, ddof=1) / np.sqrt(len(v))) if "
      "len(v) >= 2 else None"
    ),
    (
      "ci95 = lambda v: float(1.96 * np.std(v) / np.sqrt(len(v))) if len(v) "
      ">= 2 else None"
    ),
    ["test_derived_metrics"],
    "headline interval from the population std",
  ),
  M(
    "panda",
    "train",
    'if d := _gains(cells, _pairs(cells), "panda", arm):',
    'if d := _gains(cells, _pairs(cells), arm, "panda"):',
    ["test_derived_metrics"],
    "ablation minus PANDA",
  ),
  M(
    "panda",
    "train",
    (
      'deltas = {p: cells[f"{p}|panda"]["test_mean"] - '
      'cells[f"{p}|vanilla"]["test_mean"] for p in both}'
    ),
    (
      'deltas = {p: cells[f"{p}|vanilla"]["test_mean"] - '
      'cells[f"{p}|panda"]["test_mean"] for p in both}'
    ),
    ["test_improvement"],
    "vanilla minus PANDA in the headline",
  ),
  M(
    "panda",
    "train",
    "t = core.paired_difference(a, b)",
    "t = core.paired_difference(b, a)",
    ["test_pair_statistics"],
    "paired difference taken as baseline minus arm",
  ),
  M(
    "panda",
    "train",
    'return max(sweep, key=lambda z: np.mean(z["val"]))',
    'return min(sweep, key=lambda z: np.mean(z["val"]))',
    ["test_best_point_by_validation"],
    "sweep point with the worst validation accuracy",
  ),
  M(
    "panda",
    "jaxpapers.panda._search",
    "return int(np.flatnonzero(means >= means.max() - 1e-9)[0])",
    "return int(np.flatnonzero(means >= means.max() - 1e-9)[-1])",
    ["test_search_select"],
    "the last tied trial instead of the first",
  ),
  M(
    "panda",
    "search",
    "split_test=(test.mean(0) / 100).tolist(),",
    "split_test=(test.mean(1) / 100).tolist(),",
    ["test_search_final_cell"],
    "per-split accuracy averaged over the wrong axis",
  ),
  # ---------------------------------------------------------------- soda
  M(
    "soda",
    "jaxpapers.soda._study",
    (
      'return min(cand, key=lambda r: r["metric"] if '
      'math.isfinite(r["metric"]) else math.inf)'
    ),
    (
      'return max(cand, key=lambda r: r["metric"] if '
      'math.isfinite(r["metric"]) else math.inf)'
    ),
    ["test_best", "test_claims_per_horizon"],
    "best run is the worst",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    'r["metric"] if math.isfinite(r["metric"]) else math.inf)',
    'r["metric"] if math.isfinite(r["metric"]) else -math.inf)',
    ["test_best_ranks_a_diverged_run_last"],
    "a diverged run (NaN metric) chosen as the best",
  ),
  M(
    "soda",
    "grid",
    "blocks[hits[0] if hits else suffixes[0]].append((family, hp))",
    "blocks[hits[0] if hits else suffixes[-1]].append((family, hp))",
    ["test_cell_blocks"],
    (
      "a family no stage names trained in the last stage's cell, "
      "not the first run's"
    ),
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    'gap = b["metric"] - s["metric"]  # > 0: SODA better',
    'gap = s["metric"] - b["metric"]  # > 0: SODA better',
    ["test_claims_per_horizon"],
    "gap signed so that a worse SODA counts as better",
  ),
  M(
    "soda",
    "evaluate",
    (
      'out[f"{task}_{base}_worst_gap_in_std"] = min(c["gap_in_seed_std"] for '
      "c in cs)"
    ),
    (
      'out[f"{task}_{base}_worst_gap_in_std"] = max(c["gap_in_seed_std"] for '
      "c in cs)"
    ),
    ["test_derived_metrics"],
    "best horizon's gap instead of the worst",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    '"penalty_at_longest_in_std": penalty(t_l, bl, bs["wd"]),',
    '"penalty_at_longest_in_std": penalty(t_l, bl, bl["wd"]),',
    ["test_wd_transfer"],
    "transfer penalty with the longest horizon's own weight decay",
  ),
  M(
    "soda",
    "evaluate",
    "fin, curve = nll, curve[:, :, 1]",
    "fin, curve = acc, curve[:, :, 1]",
    ["test_summaries"],
    "claim metric NLL and accuracy swapped",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    '"soda_beats_wd0": (s["metric"] < b0["metric"]) if b0 else None,',
    '"soda_beats_wd0": (s["metric"] > b0["metric"]) if b0 else None,',
    ["test_claims_per_horizon"],
    "SODA counted as beating wd = 0 where its loss is higher",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    '  if lower and value <= min(grid):\n    return "low"',
    '  if lower and value < min(grid):\n    return "low"',
    ["test_grid_edges", "test_grid_edges_of_a_one_point_grid"],
    "an optimum at the bottom of the grid counted as interior",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    '  if value >= max(grid):\n    return "high"',
    '  if value > max(grid):\n    return "high"',
    ["test_grid_edges"],
    "an optimum at the top of the grid counted as interior",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    'e["at_edge"] = e["base_at_edge"] + bool(e["soda_lr_edge"])',
    'e["at_edge"] = e["base_at_edge"]',
    ["test_grid_edges"],
    "SODA's learning rate at an edge not counted",
  ),
  M(
    "soda",
    "jaxpapers.soda._study",
    '"base_wd_edge": _edge(b["wd"], grid(base, "wd"), lower=False),',
    '"base_wd_edge": _edge(b["wd"], grid(base, "wd")),',
    ["test_grid_edges_weight_decay_zero_is_not_an_edge"],
    "weight decay 0 counted as an edge",
  ),
  M(
    "soda",
    "evaluate",
    (
      'out[f"{task}_{base}_horizons_at_edge"] = [int(t) for t in ts if '
      'by_t[t]["at_edge"] > 0]'
    ),
    (
      'out[f"{task}_{base}_horizons_at_edge"] = [int(t) for t in ts if '
      'by_t[t]["at_edge"] > 1]'
    ),
    ["test_derived_edge_horizons"],
    "a horizon with one optimum at an edge not reported",
  ),
  # ---------------------------------------------------------------- sola
  M(
    "sola",
    "train",
    'best = min(base, key=lambda m: bpb(m)["mean"])',
    'best = max(base, key=lambda m: bpb(m)["mean"])',
    ["test_derived_metrics"],
    "SOLA compared with the worst cross-tokenizer baseline",
  ),
  M(
    "sola",
    "train",
    'noise = 2.0 * float(np.sqrt((a["std"] ** 2 + b["std"] ** 2) / n_seeds))',
    'noise = 2.0 * float(np.sqrt((a["std"] ** 2 + b["std"] ** 2)))',
    ["test_derived_metrics"],
    "noise half-width without dividing by the seeds",
  ),
  M(
    "sola",
    "train",
    'd, h = diff(sola, bpb("ce"))',
    'd, h = diff(bpb("ce"), sola)',
    ["test_derived_metrics"],
    "CE-only minus SOLA",
  ),
  M(
    "sola",
    "train",
    "return slice(i * seeds, (i + 1) * seeds)",
    "return slice(i * seeds + 1, (i + 1) * seeds + 1)",
    ["test_method_rows_and_group_hparams"],
    "method rows shifted by one seed",
  ),
  # ---------------------------------------------------------------- sscl
  M(
    "sscl",
    "evaluate",
    (
      'singles = np.maximum(summary["cisc_only"]["miou"], '
      'summary["sgsr_only"]["miou"])'
    ),
    (
      'singles = np.minimum(summary["cisc_only"]["miou"], '
      'summary["sgsr_only"]["miou"])'
    ),
    ["test_derived_metrics"],
    "SSCL against the worse single objective",
  ),
  M(
    "sscl",
    "evaluate",
    "d = np.asarray(summary[a][metric]) - np.asarray(summary[b][metric])",
    "d = np.asarray(summary[b][metric]) - np.asarray(summary[a][metric])",
    ["test_derived_metrics"],
    "paired differences with the operands swapped",
  ),
  M(
    "sscl",
    "evaluate",
    (
      'rs = sorted([r for r in grid["finetune"] if r["arm"] == a], '
      'key=lambda r: r["seed"])'
    ),
    'rs = [r for r in grid["finetune"] if r["arm"] == a]',
    ["test_summarize_orders_by_seed", "test_derived_metrics"],
    "arms not ordered by seed (pairs broken)",
  ),
  M(
    "sscl",
    "evaluate",
    'table[name] = {"miou": [r["evals"][f"miou_{name}"] for r in pre]}',
    'table[name] = {"miou": [r["evals"]["miou"] for r in pre]}',
    ["test_summarize_orders_by_seed", "test_derived_metrics"],
    "training-free readouts read from the raw readout",
  ),
  M(
    "sscl",
    "jaxpapers.sscl._benchmark",
    'out = {"majority_miou": miou(np.full_like(tgt, counts.argmax()))}',
    'out = {"majority_miou": miou(np.full_like(tgt, counts.argmin()))}',
    ["test_trivial_baselines"],
    "majority baseline predicts the rarest class",
  ),
  M(
    "sscl",
    "evaluate",
    'out[f"probe_acc_{kind}_min"] = float(np.min(accs))',
    'out[f"probe_acc_{kind}_min"] = float(np.mean(accs))',
    ["test_probes_and_placebo_are_read_per_seed"],
    "probe precondition read from the seed mean, not the worst seed",
  ),
  M(
    "sscl",
    "evaluate",
    'table[name] = {"miou": [r["evals"][f"miou_{name}"] for r in pre]}',
    (
      'table[name] = {"miou": [r["evals"][f"miou_{name}".replace("_placebo", '
      '"")] for r in pre]}'
    ),
    ["test_probes_and_placebo_are_read_per_seed"],
    "placebo control read from the real refinement",
  ),
  M(
    "sscl",
    "jaxpapers.sscl._benchmark",
    'out["chance_region_acc"] = 1.0 / C',
    'out["chance_region_acc"] = 0.25',
    ["test_trivial_baselines"],
    "chance region accuracy fixed at four classes",
  ),
  M(
    "sscl",
    "evaluate",
    '        out[name + "_min"] = float(d.min())',
    '        out[name + "_min"] = float(d.mean())',
    ["test_derived_metrics"],
    "keep-only precondition read from the seed mean, not the worst seed",
  ),
  # -------------------------------------------------------- core (shared noise)
  M(
    "core",
    "jaxpapers.core.report",
    "return float(_T975.get(n, 1.96) * a.std(ddof=1) / math.sqrt(n))",
    "return float(_T975.get(n, 1.96) * a.std() / math.sqrt(n))",
    ["test_ci95_halfwidth"],
    "95% half-width from the population std",
  ),
  M(
    "core",
    "jaxpapers.core.report",
    "return float(_T975.get(n, 1.96) * a.std(ddof=1) / math.sqrt(n))",
    "return float(_T975.get(n - 1, 1.96) * a.std(ddof=1) / math.sqrt(n))",
    ["test_ci95_halfwidth"],
    "t quantile looked up one sample size off",
  ),
  M(
    "core",
    "jaxpapers.core.stats",
    "return float(max(self.estimate - self.lo, self.hi - self.estimate))",
    "return float(min(self.estimate - self.lo, self.hi - self.estimate))",
    ["test_bootstrap_half_width"],
    "bootstrap half-width from the narrower side of the interval",
  ),
  # ------------------------------------------------ more: per-question outcomes
  M(
    "lanr",
    "jaxpapers.lanr._eval",
    '"em": np.asarray(correct)[np.arange(len(n)), n].astype(float).tolist(),',
    (
      '"em": np.asarray(correct)[np.arange(len(n)), '
      "n - 1].astype(float).tolist(),"
    ),
    ["test_stop_outcomes"],
    "accuracy read one call early (off by one)",
  ),
  M(
    "lanr",
    "jaxpapers.lanr._eval",
    "float(set(g) <= set(d[:k].tolist()))",
    "float(set(g) <= set(d[: k - 1].tolist()))",
    ["test_stop_outcomes"],
    "support recall over one document too few",
  ),
  M(
    "locos",
    "evaluate",
    "return ok[ok < n] if n else ok",
    "return ok[ok <= n] if n else ok",
    ["test_ablated_probes"],
    "filtered protocol keeps one item too many",
  ),
  M(
    "dual_rate",
    "jaxpapers.dual_rate._quality",
    'base_rows = [r for r in rows if r["method"] in base_methods]',
    'base_rows = [r for r in rows if r["method"] == base_methods[0]]',
    ["test_headline_with_several_samplers"],
    "matched-quality target from the first baseline sampler only",
  ),
)

# The two mistakes that must be caught (they went unnoticed before this file
# existed).
REQUIRED = (
  ("dense_limits", "slope"),
  ("bayes_memory", "worst retriever"),
)


# -------------------------------------------------------------------- machinery


def _source(name: str) -> tuple[str, str]:
  spec = importlib.util.find_spec(name)
  if spec is None or spec.origin is None:
    raise ModuleNotFoundError(name)
  return pathlib.Path(spec.origin).read_text(), spec.origin


def _build(
  name: str, source: str, origin: str, inject: dict[str, types.ModuleType]
):
  """A fresh module ``name`` compiled from ``source``, importing ``inject`` in
  place of the real modules (by name); neither ``sys.modules`` nor any package
  is left changed."""
  mod = types.ModuleType(name)
  mod.__file__ = origin
  mod.__package__ = name.rpartition(".")[0]
  saved = {}
  patched = {**inject, name: mod}
  try:
    for dep, m in patched.items():
      parent, _, leaf = dep.rpartition(".")
      pkg = sys.modules.get(parent) if parent else None
      saved[dep] = (
        sys.modules.get(dep),
        pkg,
        getattr(pkg, leaf, None) if pkg else None,
      )
      sys.modules[dep] = m
      if pkg is not None:
        setattr(pkg, leaf, m)
    exec(compile(source, origin, "exec"), mod.__dict__)
  finally:
    for dep, (old, pkg, attr) in saved.items():
      if old is None:
        sys.modules.pop(dep, None)
      else:
        sys.modules[dep] = old
      if pkg is not None:
        leaf = dep.rpartition(".")[2]
        if attr is None:
          delattr(pkg, leaf)
        else:
          setattr(pkg, leaf, attr)
  return mod


# A snippet is matched as a sequence of tokens, so that a change of layout alone
# (line breaks, indentation, comments, a trailing comma before a closing
# bracket, grouping parentheses, a string literal split into adjacent literals)
# does not make it stale. A snippet that is not made of whole tokens is matched
# as text.

_LAYOUT = frozenset(
  {
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.COMMENT,
  }
  | {tokenize.ENDMARKER, tokenize.ENCODING}
)


@dataclasses.dataclass(frozen=True)
class _Tok:
  key: tuple  # what two tokens are compared by
  start: int  # character offsets into the text
  end: int


def _tokens(text: str, fragment: bool) -> list[_Tok] | None:
  """The tokens of ``text`` without layout, or None when it is not made of whole
  tokens.

  Adjacent string literals become one token (compared by prefix, quote and
  joined body); a comma right before a closing bracket is dropped. A fragment (a
  snippet) is tokenized line by line without its indentation, so a snippet may
  start inside a block.
  """
  lines = text.splitlines(keepends=True)
  starts, pos = [], 0
  for line in lines:
    starts.append(pos)
    pos += len(line)
  cut = [len(x) - len(x.lstrip(" \t")) if fragment else 0 for x in lines]
  feed = iter([x[c:] for x, c in zip(lines, cut)])
  raw = []
  try:
    for t in tokenize.generate_tokens(lambda: next(feed, "")):
      raw.append(t)
  except tokenize.TokenError:
    if not fragment:
      raise
  except (IndentationError, SyntaxError):
    return None
  toks: list[_Tok] = []
  prev_string = False
  for t in raw:
    if t.type in _LAYOUT:
      continue
    if t.type == tokenize.ERRORTOKEN and t.string.strip():
      return None
    if t.type == tokenize.ERRORTOKEN:
      continue
    a = starts[t.start[0] - 1] + cut[t.start[0] - 1] + t.start[1]
    b = starts[t.end[0] - 1] + cut[t.end[0] - 1] + t.end[1]
    if t.type == tokenize.STRING:
      body = t.string.lstrip("rRbBuUfF")
      flags = "".join(
        sorted(set(t.string[: len(t.string) - len(body)].lower()) & set("rb"))
      )
      q = 3 if body[:3] in ('"""', "'''") else 1
      key = ("str", flags, body[0], body[q:-q])
      if prev_string and toks[-1].key[:3] == key[:3]:
        merged = ("str", flags, body[0], toks[-1].key[3] + key[3])
        toks[-1] = _Tok(merged, toks[-1].start, b)
        continue
      toks.append(_Tok(key, a, b))
      prev_string = True
      continue
    prev_string = False
    if t.string in ")]}" and toks and toks[-1].key == ("op", ","):
      toks.pop()
    toks.append(
      _Tok(("op" if t.type == tokenize.OP else "tok", t.string), a, b)
    )
  return toks


def _groups(toks: collections.abc.Sequence[_Tok]) -> dict[int, int]:
  """Grouping parentheses (not a call or a subscript): opening index -> closing
  index."""
  out, stack = {}, []
  for i, t in enumerate(toks):
    if t.key == ("op", "("):
      p = toks[i - 1].key if i else None
      call = p is not None and (
        p[0] == "str"
        or p in (("op", ")"), ("op", "]"))
        or (
          p[0] == "tok" and p[1].isidentifier() and not keyword.iskeyword(p[1])
        )
      )
      stack.append((i, not call))
    elif t.key == ("op", ")") and stack:
      j, grouping = stack.pop()
      if grouping:
        out[j] = i
  return out


def _match(
  src: collections.abc.Sequence[_Tok],
  pat: list[_Tok],
  i: int,
  gs,
  gp,
) -> list[int | None] | None:
  """pat matched at src[i:]: the source index of each pattern token (None:
  skipped).

  gs, gp: the grouping parentheses of src and pat (see ``_groups``).
  """

  def rec(i, j, skip_s, skip_p, where):
    while True:
      if j == len(pat):
        return where
      if j in skip_p:
        where, j = [*where, None], j + 1
        continue
      if i == len(src):
        return None
      if i in skip_s:
        i += 1
        continue
      break
    if src[i].key == pat[j].key:
      r = rec(i + 1, j + 1, skip_s, skip_p, [*where, i])
      if r is not None:
        return r
    if where and i in gs:  # a pair of parentheses the snippet does not have
      r = rec(i + 1, j, skip_s | {gs[i]}, skip_p, where)
      if r is not None:
        return r
    if j in gp:  # a pair of parentheses the source does not have
      return rec(i, j + 1, skip_s, skip_p | {gp[j]}, [*where, None])
    return None

  return rec(i, 0, frozenset(), frozenset(), [])


def _pattern(snippet: str) -> list[_Tok] | None:
  """The tokens a snippet is matched by; a comma that ends it is not needed to
  find it."""
  toks = _tokens(snippet, fragment=True)
  if toks and toks[-1].key == ("op", ","):
    toks = toks[:-1]
  return toks


@functools.cache
def _module_tokens(src: str) -> tuple[tuple[_Tok, ...], dict[int, int]]:
  """The tokens of a module's source and its grouping parentheses (see
  ``_groups``), computed once per source: many mutations share a module."""
  toks = _tokens(src, fragment=False)
  assert toks is not None
  return tuple(toks), _groups(toks)


def _occurrences(
  src: str, old: str
) -> list[tuple[tuple[_Tok, ...], list[int | None]]] | None:
  """Token matches of ``old`` in ``src``, or None when ``old`` is matched as
  text."""
  pat = _pattern(old)
  if not pat:
    return None
  toks, gs = _module_tokens(src)
  gp = _groups(pat)
  found = []
  for i in range(len(toks)):
    if toks[i].key == pat[0].key or pat[0].key == ("op", "("):
      where = _match(toks, pat, i, gs, gp)
      if where is not None:
        idx = [w for w in where if w is not None]
        found.append((min(idx), max(idx), where.count(None), where))
  # Matches that overlap are one occurrence (e.g. with and without an outer pair
  # of parentheses); keep the one that skips the fewest snippet tokens.
  found.sort(key=lambda f: (f[0], f[2]))
  out = []
  for f in found:
    if out and f[0] <= out[-1][1]:
      if f[2] < out[-1][2]:
        out[-1] = f
      continue
    out.append(f)
  return [(toks, f[3]) for f in out]


def _replace(src: str, toks, where, old: str, new: str) -> str:
  """``src`` with the matched ``old`` changed into ``new``: the tokens where the
  two snippets differ are replaced by the text of ``new`` between them; the
  source's layout stays."""
  p, q = _pattern(old), _pattern(new)
  assert p is not None
  if q is None:
    raise AssertionError(
      f"the replacement is not made of whole tokens: {new!r}"
    )
  pre = 0
  while pre < min(len(p), len(q)) and p[pre].key == q[pre].key:
    pre += 1
  suf = 0
  while suf < min(len(p), len(q)) - pre and p[-1 - suf].key == q[-1 - suf].key:
    suf += 1
  mapped = [where[k] for k in range(pre, len(p) - suf) if where[k] is not None]
  if mapped:
    a, b = toks[min(mapped)].start, toks[max(mapped)].end
    text = (
      new[q[pre].start : q[len(q) - suf - 1].end] if pre < len(q) - suf else ""
    )
  else:  # an insertion after the common prefix
    before = [w for w in where[:pre] if w is not None]
    assert before, f"cannot place the replacement {new!r}"
    a = b = toks[before[-1]].end
    text = new[q[pre - 1].end : q[len(q) - suf - 1].end]
  return src[:a] + text + src[b:]


def _mutant(m: Mutation) -> types.ModuleType:
  src, origin = _source(m.module)
  found = _occurrences(src, m.old)
  n = src.count(m.old) if not found else len(found)
  assert n == 1, (
    f"{m.id}: the snippet must occur exactly once in {m.module}, "
    f"found {n} times; update MUTATIONS after a refactor of the claim "
    f"code:\n{m.old}"
  )
  mutated = (
    src.replace(m.old, m.new)
    if not found
    else _replace(src, *found[0], m.old, m.new)
  )
  assert mutated != src, f"{m.id}: the mutation changes nothing"
  return _build(m.module, mutated, origin, {})


def _test_file(paper: str) -> types.ModuleType:
  return importlib.import_module(f"tests.claims.test_{paper}_claim_code")


def _test_fn(paper: str, name: str):
  tf = _test_file(paper)
  fn = getattr(tf, name, None)
  assert fn is not None, (
    f"tests/claims/test_{paper}_claim_code.py has no {name}"
  )
  params = list(inspect.signature(fn).parameters)
  assert len(params) == 1 and params[0] in tf.MODULES, (
    f"{name} must take one argument named by MODULES of its file, got {params}"
  )
  marks = [mk.name for mk in getattr(fn, "pytestmark", [])]
  assert "xfail" not in marks, (
    f"{name} is an expected failure: it cannot catch a mutation"
  )
  return fn, tf.MODULES[params[0]]


def _fails(fn, module) -> BaseException | None:
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a mutant may well divide by zero
    try:
      fn(module)
    except Exception as e:
      return e
  return None


@functools.cache
def _passes_on_real_code(paper: str, name: str) -> bool:
  fn, target = _test_fn(paper, name)
  return _fails(fn, importlib.import_module(target)) is None


def _module_for(
  m: Mutation, mutant: types.ModuleType, target: str
) -> types.ModuleType:
  if target == m.module:
    return mutant
  src, origin = _source(target)
  return _build(target, src, origin, {m.module: mutant})


# ------------------------------------------------------------------------ tests


@pytest.mark.parametrize("m", MUTATIONS, ids=lambda m: m.id)
def test_mutation_is_caught(m: Mutation):
  mutant = _mutant(m)
  caught = []
  for name in m.tests:
    fn, target = _test_fn(m.paper, name)
    assert _passes_on_real_code(m.paper, name), f"{name} fails on the real code"
    err = _fails(fn, _module_for(m, mutant, target))
    if err is not None:
      caught.append(name)
  assert caught, (
    f"no test caught the mutation {m.id!r} of {m.module}: "
    f"{m.old!r} -> {m.new!r}"
  )


def test_the_list_covers_every_paper():
  root = pathlib.Path(__file__).resolve().parents[2] / "experiments"
  papers = sorted(p.name for p in root.iterdir() if (p / "configs").is_dir())
  per = {p: sum(m.paper == p for m in MUTATIONS) for p in papers}
  assert {p: n for p, n in per.items() if n < 2} == {}, (
    "every paper needs >= 2 mutations"
  )
  assert len(MUTATIONS) >= 40
  assert len({(m.module, m.old, m.new) for m in MUTATIONS}) == len(MUTATIONS), (
    "duplicate"
  )
  for paper, words in REQUIRED:
    assert any(m.paper == paper and words in m.what for m in MUTATIONS), (
      paper,
      words,
    )
