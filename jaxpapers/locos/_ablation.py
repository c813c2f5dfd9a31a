"""Head-ablation curves with random-head controls and bootstrap intervals (spec
§3.3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers import lm
from jaxpapers.locos._scores import (
  TokenizerLike,
  Trial,
  bucket_indices,
  random_heads,
  rouge1_recall,
  rouge_l,
  top_heads,
)

_METRICS = ("rougeL", "rouge1_recall", "exact")


def bootstrap_ci(
  values: ArrayLike,
  *,
  num_resamples: int = 1000,
  alpha: float = 0.05,
  seed: int = 0,
) -> tuple[float, float]:
  """Percentile bootstrap (1 − alpha) interval of the mean of `values`.

  Empty `values`: (nan, nan) (nothing measured). NaN values raise ValueError.

  Args:
    values: finite per-item scores, any shape (flattened).
    num_resamples: bootstrap resamples (>= 1).
    alpha: two-sided level in (0, 1); 0.05 gives a 95% interval.
    seed: seed of the numpy generator drawing the resamples.

  Returns:
    (lo, hi), the alpha/2 and 1 − alpha/2 quantiles of the resampled means.
  """
  if not 0.0 < alpha < 1.0:
    raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
  if (
    isinstance(num_resamples, bool)
    or not isinstance(num_resamples, (int, np.integer))
    or num_resamples < 1
  ):
    raise ValueError(
      f"num_resamples must be an int >= 1, got {num_resamples!r}"
    )
  v = np.asarray(values, np.float64).ravel()
  if v.size == 0:
    return float("nan"), float("nan")
  if not np.all(np.isfinite(v)):
    raise ValueError("values must be finite (found NaN or inf)")
  rng = np.random.default_rng(seed)
  means = v[rng.integers(0, v.size, size=(num_resamples, v.size))].mean(1)
  return float(np.quantile(means, alpha / 2)), float(
    np.quantile(means, 1 - alpha / 2)
  )


def score_text(answer: str, generation: str, metric: str) -> float:
  """ROUGE-L F1, ROUGE-1 recall, or exact match (lower-cased, stripped).

  Args:
    answer: the gold answer.
    generation: the decoded generation.
    metric: 'rougeL' (`rouge_l`), 'rouge1_recall' (`rouge1_recall`) or 'exact'.

  Returns:
    The score in [0, 1].
  """
  if not isinstance(answer, str) or not isinstance(generation, str):
    raise TypeError(
      f"answer and generation must be str, got {type(answer).__name__} and "
      f"{type(generation).__name__}"
    )
  if metric == "rougeL":
    return rouge_l(answer, generation)
  if metric == "rouge1_recall":
    return rouge1_recall(answer, generation)
  if metric == "exact":
    return float(generation.strip().lower() == answer.strip().lower())
  raise ValueError(f"metric must be one of {_METRICS}, got {metric!r}")


def generate_texts(
  params: lm.Params,
  config: lm.LMConfig,
  probes: Sequence[Trial],
  tokenizer: TokenizerLike,
  *,
  ablation: lm.HeadAblation | None = None,
  max_new_tokens: int = 20,
  stop_ids: Sequence[int] | None = None,
  batch_size: int = 8,
  pad_to: int | Sequence[int] | None = None,
) -> list[str]:
  """Greedy generations of every probe (optionally ablated), in the order of
  `probes`.

  Prompts are left-padded per length bucket (see `bucket_indices`), so a list of
  bucket lengths compiles the decoder once per bucket whatever the prompt
  lengths are (the ablation mask is data: every head set reuses the program).

  `ablation.mask` is either one head set [L, H] for every probe or one per probe
  [len(probes), L, H]. Per-probe masks let one call evaluate many (probe, head
  set) pairs, e.g. several ablation conditions or random seeds, in full batches
  on device; the result equals calling this function once per head set (rows
  never interact).

  Args:
    params: the model's weights.
    config: the model's config.
    probes: the trials to decode.
    tokenizer: the model's tokenizer (decode, stop_ids).
    ablation: heads to ablate (mask bool [L, H] or [len(probes), L, H]); None
      ablates nothing.
    max_new_tokens: maximum generated tokens per probe.
    stop_ids: ids that end decoding; default `tokenizer.stop_ids()`.
    batch_size: prompts per generation call (>= 1).
    pad_to: padding lengths, as in `bucket_indices`.

  Returns:
    One decoded generation per probe (stop token excluded), in the order of
    `probes`.
  """
  probes = list(probes)
  if not probes or not all(isinstance(p, Trial) for p in probes):
    raise ValueError("probes must be a non-empty sequence of Trial")
  masks = None  # per-probe head sets, bool [len(probes), L, H]
  if ablation is not None and np.ndim(ablation.mask) == 3:
    if np.shape(ablation.mask)[0] != len(probes):
      raise ValueError(
        f"a per-probe ablation.mask must be [len(probes)={len(probes)}, L, "
        f"H], got {tuple(np.shape(ablation.mask))}"
      )
    masks = np.asarray(ablation.mask, bool)
  if (
    isinstance(batch_size, bool)
    or not isinstance(batch_size, (int, np.integer))
    or batch_size < 1
  ):
    raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
  if stop_ids is None:
    stop_ids = tokenizer.stop_ids()
  out: list[str] = [""] * len(probes)
  for length, idx in bucket_indices(
    [len(p.prompt_ids) for p in probes], pad_to
  ):
    for i in range(0, len(idx), batch_size):
      chunk = [probes[j] for j in idx[i : i + batch_size]]
      rows = [p.prompt_ids for p in chunk]
      # a last, partial chunk is padded to a multiple of min(8, batch_size)
      # rows, not to batch_size: a few more compiled shapes instead of up to
      # batch_size - 1 wasted rows
      step = min(8, batch_size)
      width = min(batch_size, -(-len(rows) // step) * step)
      rows = rows + [rows[-1]] * (width - len(rows))
      ids, mask = lm.left_pad(rows, length=length)
      abl = ablation
      if ablation is not None and masks is not None:
        # per-probe head sets: the chunk's, with filler rows repeating the last
        # one
        sel = idx[i : i + batch_size]
        sel = sel + [sel[-1]] * (width - len(sel))
        abl = lm.HeadAblation(
          mask=jnp.asarray(masks[sel]), mean=ablation.mean, mode=ablation.mode
        )
      g = lm.generate(
        params,
        ids,
        config=config,
        prompt_mask=mask,
        max_new_tokens=max_new_tokens,
        stop_ids=stop_ids,
        ablation=abl,
      )
      toks, n = np.asarray(g.tokens), np.asarray(g.num_steps)
      for b, j in enumerate(idx[i : i + batch_size]):
        out[j] = tokenizer.decode(toks[b, : n[b]].tolist())
  return out


def evaluate_probes(
  params: lm.Params,
  config: lm.LMConfig,
  probes: Sequence[Trial],
  tokenizer: TokenizerLike,
  *,
  ablation: lm.HeadAblation | None = None,
  max_new_tokens: int = 20,
  stop_ids: Sequence[int] | None = None,
  metric: str = "rougeL",
  batch_size: int = 8,
  pad_to: int | Sequence[int] | None = None,
) -> np.ndarray:
  """Greedy-decode every probe (optionally ablated, see `generate_texts`) and
  score it.

  Args:
    params: the model's weights.
    config: the model's config.
    probes: the trials; each generation is scored against its `answer`.
    tokenizer: the model's tokenizer.
    ablation: heads to ablate, as in `generate_texts`; None ablates nothing.
    max_new_tokens: maximum generated tokens per probe.
    stop_ids: ids that end decoding; default `tokenizer.stop_ids()`.
    metric: 'rougeL', 'rouge1_recall' or 'exact' (see `score_text`).
    batch_size: prompts per generation call.
    pad_to: padding lengths, as in `bucket_indices`.

  Returns:
    f64 [num_probes], in the order of `probes`.
  """
  if metric not in _METRICS:
    raise ValueError(f"metric must be one of {_METRICS}, got {metric!r}")
  texts = generate_texts(
    params,
    config,
    probes,
    tokenizer,
    ablation=ablation,
    max_new_tokens=max_new_tokens,
    stop_ids=stop_ids,
    batch_size=batch_size,
    pad_to=pad_to,
  )
  return np.asarray(
    [score_text(p.answer, t, metric) for p, t in zip(probes, texts)]
  )


def ablation_curve(
  params: lm.Params,
  config: lm.LMConfig,
  probes: Sequence[Trial],
  head_rankings: Mapping[str, np.ndarray],
  ks: Sequence[int],
  *,
  tokenizer: TokenizerLike,
  mode: str = "mean_q",
  mean: ArrayLike | None = None,
  calibration_prompts: Sequence[Sequence[int]] | None = None,
  metric: str = "rougeL",
  num_random: int = 5,
  key: jax.Array | None = None,
  max_new_tokens: int = 20,
  stop_ids: Sequence[int] | None = None,
  batch_size: int = 8,
  pad_to: int | Sequence[int] | None = None,
  num_resamples: int = 1000,
) -> dict[str, Any]:
  """Task score vs number of ablated heads for each detector and for random
  heads.

  For every detector and k, the top-k heads of its ranking are ablated (query
  mean / zero, or output zero) and every probe is greedy-decoded and scored.
  Random heads: `num_random` seeds per k. The ablation mask is data, so one
  compilation serves every (detector, k).

  Args:
    params: the model's weights.
    config: the model's config (L = n_layers, H = n_heads).
    probes: the evaluation trials (answers are scored against generations).
    head_rankings: detector name -> scores [L, H] (higher = ablate first).
    ks: numbers of heads to ablate (capped at L·H).
    tokenizer: encode/decode/stop_ids.
    mode: 'mean_q' (spec default), 'zero_q' or 'zero_out'.
    mean: f32 [L, H, dh] mean queries; computed from `calibration_prompts` with
      `lm.mean_queries` when None (zeros for the 'zero_*' modes).
    calibration_prompts: token lists for `lm.mean_queries` (needed when
      mode='mean_q' and `mean` is None).
    metric: 'rougeL', 'rouge1_recall' or 'exact'.
    num_random: random-head seeds per k.
    key: PRNG key for the random heads; None uses `jax.random.key(0)`.
    max_new_tokens: maximum generated tokens per probe.
    stop_ids: ids that end decoding; default `tokenizer.stop_ids()`.
    batch_size: prompts per generation call.
    pad_to: padding lengths, as in `bucket_indices`.
    num_resamples: bootstrap resamples of every interval (`bootstrap_ci`).

  Returns:
    {'ks', 'baseline': {'mean', 'lo', 'hi'}, '<detector>' and 'random':
     {'mean': [..], 'lo': [..], 'hi': [..]} per k, 'per_probe': {...}}.
  """
  if mode not in ("mean_q", "zero_q", "zero_out"):
    raise ValueError(
      f"mode must be 'mean_q', 'zero_q' or 'zero_out', got {mode!r}"
    )
  L, H = config.n_layers, config.n_heads
  ks = list(ks)
  if any(
    isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0
    for k in ks
  ):
    raise ValueError(f"ks must be ints >= 0, got {ks!r}")
  ks = [min(int(k), L * H) for k in ks]
  for name, sc in head_rankings.items():
    if np.shape(sc) != (L, H):
      raise ValueError(
        f"head_rankings[{name!r}] must be [L, H] = [{L}, {H}], "
        f"got {np.shape(sc)}"
      )
  if mode == "mean_q" and mean is None:
    if calibration_prompts is None:
      raise ValueError("mode='mean_q' needs mean or calibration_prompts")
    mean = lm.mean_queries(params, calibration_prompts, config=config)
  if mean is None:
    mean = jnp.zeros((L, H, config.head_dim), jnp.float32)
  key = jax.random.key(0) if key is None else key

  def run(mask):
    abl = lm.HeadAblation(
      mask=jnp.asarray(mask), mean=jnp.asarray(mean), mode=mode
    )
    return evaluate_probes(
      params,
      config,
      probes,
      tokenizer,
      ablation=abl,
      max_new_tokens=max_new_tokens,
      stop_ids=stop_ids,
      metric=metric,
      batch_size=batch_size,
      pad_to=pad_to,
    )

  def summary(vals_per_k):
    cis = [
      bootstrap_ci(v, num_resamples=num_resamples, seed=i)
      for i, v in enumerate(vals_per_k)
    ]
    return {
      "mean": [float(np.mean(v)) for v in vals_per_k],
      "lo": [c[0] for c in cis],
      "hi": [c[1] for c in cis],
    }

  base = run(np.zeros((L, H), bool))
  lo, hi = bootstrap_ci(base, num_resamples=num_resamples)
  result = {
    "ks": ks,
    "baseline": {"mean": float(base.mean()), "lo": lo, "hi": hi},
    "per_probe": {"baseline": base.tolist()},
  }
  for name, scores in head_rankings.items():
    vals = [run(top_heads(scores, k)) for k in ks]
    result[name] = summary(vals)
    result["per_probe"][name] = [v.tolist() for v in vals]
  rand = []
  for k in ks:
    seeds = [
      run(random_heads(jax.random.fold_in(key, 1000 * k + s), L, H, k))
      for s in range(num_random)
    ]
    rand.append(np.concatenate(seeds))
  result["random"] = summary(rand)
  return result


def ablation_conditions(
  scores: Mapping[str, ArrayLike],
  detectors: Sequence[str],
  ks: Sequence[int],
  num_layers: int,
  num_heads: int,
  num_random: int,
  key: jax.Array,
) -> list[tuple[str, int, list[np.ndarray]]]:
  """The head sets of an ablation grid: none, each detector's top k, and random
  heads.

  Random heads use the keys of :func:`ablation_curve`
  (``fold_in(key, 1000 k + s)`` for seed s), so a run over probe blocks and a
  run over whole probe sets draw the same head sets.

  Args:
    scores: detector name -> [L, H] head scores (higher = ablated first).
    detectors: the detectors to ablate, in order.
    ks: numbers of heads to ablate.
    num_layers: L.
    num_heads: H, query heads per layer.
    num_random: random-head seeds per k (0: no random heads).
    key: PRNG key of the random heads.

  Returns:
    ``[(name, k, masks)]``: ``("baseline", 0, [no head])``, ``(detector, k,
    [top-k heads])`` for every detector and k, then ``("random", k, [one mask
    per seed])`` for every k; each mask is bool [L, H].
  """
  if num_random < 0:
    raise ValueError(f"num_random must be >= 0, got {num_random!r}")
  out = [("baseline", 0, [np.zeros((num_layers, num_heads), bool)])]
  for d in detectors:
    out += [(d, k, [top_heads(scores[d], k)]) for k in ks]
  for k in ks:
    keys = [jax.random.fold_in(key, 1000 * k + s) for s in range(num_random)]
    out.append(
      ("random", k, [random_heads(kk, num_layers, num_heads, k) for kk in keys])
    )
  return out


def seed_blocks(
  prompt_lengths: Sequence[int],
  pad_to: int | Sequence[int] | None,
  block_size: int,
  num_seeds: int,
) -> np.ndarray:
  """The random-head seed of every probe: seeds cycle over blocks of each length
  bucket.

  Probes are grouped into the length buckets of :func:`bucket_indices`; each
  bucket is cut into blocks of ``block_size`` probes and block j (counted over
  all buckets) gets seed ``j mod num_seeds``, so one random-heads curve costs
  one detector's generations.

  Args:
    prompt_lengths: [N] prompt lengths in tokens.
    pad_to: the padding buckets, as in :func:`bucket_indices`.
    block_size: probes per block (>= 1).
    num_seeds: random-head seeds (>= 1).

  Returns:
    [N] int seeds in ``[0, num_seeds)``.
  """
  if block_size < 1 or num_seeds < 1:
    raise ValueError(
      f"block_size and num_seeds must be >= 1, got {block_size}, {num_seeds}"
    )
  seed_of = np.zeros(len(prompt_lengths), int)
  if not len(prompt_lengths):
    return seed_of
  block = 0
  for _, idx in bucket_indices(list(prompt_lengths), pad_to):
    for j0 in range(0, len(idx), block_size):
      seed_of[list(idx[j0 : j0 + block_size])] = block % num_seeds
      block += 1
  return seed_of
