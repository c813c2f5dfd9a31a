"""LOCOS and attention-based retrieval-head detectors.

LOCOS (Logit-Contribution Scoring; Gema, Alex & Minervini, arXiv 2607.01002)
scores a head by what it *writes* onto the answer token's unembedding direction
through its OV circuit, contrasting needle and off-needle source positions.
For an answer step t with generated token y_t, u = W_U[y_t] (direct path, no
final norm), layer l, query head h and KV head kv(h) = h // (H / KV):

  û^{(l,h)}   = W_O^{(l,h)} u                                  [dh]
  c_j^{(l,h)} = v_j^{(l,kv(h))} · û^{(l,h)}                     per key j
  φ_{t,j}     = α^{(l,h)}_{t,j} c_j^{(l,h)}
  L⁺_t = Σ_{j∈needle} φ_{t,j}
  L⁻_t = (Σ_{j∉needle} φ_{t,j}) · |needle| / (K_t − |needle|)
  S_τ  = mean_{t∈T_ans} (L⁺_t − L⁻_t);   S_{l,h} = mean over accepted trials.

Σ_j φ_{t,j} = u · (z_t W_O^{(l,h)}) is the head's direct logit attribution (DLA).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers import lm
from jaxpapers.core import validation as val


class TokenizerLike(Protocol):
  """What the detectors need of a tokenizer (`jaxpapers.lm.Tokenizer` and
  `ToyTokenizer` fit)."""

  def encode(self, text: str, *, add_bos: bool | None = ...) -> list[int]: ...

  def decode(self, ids: Sequence[int]) -> str: ...

  def stop_ids(self) -> tuple[int, ...]: ...


@dataclasses.dataclass(frozen=True)
class Trial:
  """One retrieval probe.

  Attributes:
    prompt_ids: the prompt's token ids (no padding).
    needle_span: [s, e) absolute positions of the needle inside the prompt.
    answer: the gold answer string.
    kind: 'literal', 'nonliteral', or a control kind ('parametric',
      'arithmetic').
  """

  prompt_ids: tuple[int, ...]
  needle_span: tuple[int, int]
  answer: str
  kind: str = "nonliteral"

  def __post_init__(self):
    object.__setattr__(
      self, "prompt_ids", tuple(int(i) for i in self.prompt_ids)
    )
    s, e = self.needle_span
    if not (0 <= s <= e <= len(self.prompt_ids)):
      raise ValueError(
        f"needle_span {self.needle_span} must satisfy 0 <= s <= e <= "
        f"len(prompt_ids) = {len(self.prompt_ids)}"
      )
    object.__setattr__(self, "needle_span", (int(s), int(e)))


@dataclasses.dataclass
class TrialScore:
  """Per-trial detector scores.

  Attributes:
    S: LOCOS S_τ [L, H] (zeros when no answer step was found).
    L_plus, L_minus: [L, H], the two LOCOS terms averaged over answer steps.
    accepted: ROUGE-1 recall of the answer in the generation > the threshold,
      and at least one answer step found (the reference's trial filter).
    generation: the decoded generation.
    answer_steps: indices of the answer steps in the generation.
    detectors: {'locos', 'wu', 'contrastive', 'attention_spatial', 'dla'} -> [L, H].
  """

  S: np.ndarray
  L_plus: np.ndarray
  L_minus: np.ndarray
  accepted: bool
  generation: str
  answer_steps: list[int]
  detectors: dict[str, np.ndarray]


# ---------------------------------------------------------------------------
# text metrics


def _words(text: str, name: str = "text") -> list[str]:
  if not isinstance(text, str):
    raise TypeError(f"{name} must be a str, got {type(text).__name__}")
  return re.findall(r"\w+", text.lower())


def rouge1_recall(reference: str, candidate: str) -> float:
  """Unigram recall of `reference` words in `candidate` (clipped counts).

  Words are the lower-cased ``\\w+`` runs; each candidate word matches at most
  as many reference words as it occurs in the candidate.

  Args:
    reference: the gold text (e.g. a probe's answer).
    candidate: the text searched for the reference's words (e.g. a generation).

  Returns:
    The matched fraction of the reference's words in [0, 1]; 0 for an empty
    reference.
  """
  ref, cand = _words(reference, "reference"), _words(candidate, "candidate")
  if not ref:
    return 0.0
  counts: dict[str, int] = {}
  for w in cand:
    counts[w] = counts.get(w, 0) + 1
  hit = 0
  for w in ref:
    if counts.get(w, 0) > 0:
      hit += 1
      counts[w] -= 1
  return hit / len(ref)


def rouge_l(reference: str, candidate: str) -> float:
  """ROUGE-L F1: longest common subsequence (LCS) over lower-cased word tokens.

  With P = LCS / |candidate| and R = LCS / |reference|, the score is 2PR / (P + R).

  Args:
    reference: the gold text.
    candidate: the text scored against it.

  Returns:
    The F1 in [0, 1]; 0 if either text has no words or they share none.
  """
  ref, cand = _words(reference, "reference"), _words(candidate, "candidate")
  if not ref or not cand:
    return 0.0
  dp = np.zeros((len(ref) + 1, len(cand) + 1), np.int32)
  for i, a in enumerate(ref):
    for j, b in enumerate(cand):
      dp[i + 1, j + 1] = (
        dp[i, j] + 1 if a == b else max(dp[i, j + 1], dp[i + 1, j])
      )
  lcs = dp[-1, -1]
  if lcs == 0:
    return 0.0
  p, r = lcs / len(cand), lcs / len(ref)
  return float(2 * p * r / (p + r))


# ---------------------------------------------------------------------------
# answer steps


def answer_steps(
  generated_ids: Sequence[int], answer: str, tokenizer: TokenizerLike
) -> list[int]:
  """Indices of the generated tokens that spell the answer.

  First an exact contiguous match of `tokenizer.encode(answer)` inside the
  generated ids (the first occurrence); otherwise a case-insensitive match of
  the answer in the concatenation of the individually decoded tokens, taking
  every token whose character range overlaps the match. Empty if neither.

  Args:
    generated_ids: the generated token ids, in decoding order (ints).
    answer: the gold answer string.
    tokenizer: the model's tokenizer (`encode(text, add_bos=False)` and
      `decode(ids)`).

  Returns:
    Increasing positions into `generated_ids` (the answer steps T_ans); [] if
    the answer was not generated.
  """
  if not isinstance(answer, str):
    raise TypeError(f"answer must be a str, got {type(answer).__name__}")
  gen = list(generated_ids)
  if any(
    isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer))
    for i in gen
  ):
    raise TypeError("generated_ids must be a sequence of int token ids")
  gen = [int(i) for i in gen]
  target = list(tokenizer.encode(answer, add_bos=False))
  n = len(target)
  if n:
    for s in range(len(gen) - n + 1):
      if gen[s : s + n] == target:
        return list(range(s, s + n))
  pieces = [tokenizer.decode([i]) for i in gen]
  text = "".join(pieces).lower()
  m = text.find(answer.lower()) if answer else -1
  if m < 0:
    return []
  out, pos = [], 0
  for i, p in enumerate(pieces):
    a, b = pos, pos + len(p)
    if a < m + len(answer) and b > m and b > a:
      out.append(i)
    pos = b
  return out


# ---------------------------------------------------------------------------
# the pure LOCOS core


def phi_per_position(
  attn_row: ArrayLike,
  values: ArrayLike,
  wo: ArrayLike,
  u: ArrayLike,
  kv_map: ArrayLike,
) -> jax.Array:
  """φ_j = α_j · (v_{kv(h), j} · W_O^{(h)} u) for every query head of one layer.

  Args:
    attn_row: [H, K] attention of the query row over K keys.
    values: [KV, K, dh] value vectors.
    wo: [H, dh, d] output projection per head.
    u: [d] unembedding row of the answer token.
    kv_map: int [H], the KV head each query head reads (h // (H / KV)).

  Returns:
    [H, K]; its row sums are the heads' direct logit attributions.

  Shapes and dtypes are checked at trace time. A ``kv_map`` entry outside [0,
  KV) raises ``ValueError`` eagerly; under ``jax.jit`` the result is NaN (wrap
  with ``jax.experimental.checkify.checkify`` to get the error) instead of a
  clamped gather.
  """
  attn_row, values, wo, u = (jnp.asarray(a) for a in (attn_row, values, wo, u))
  kv_map = kv_map if isinstance(kv_map, jax.Array) else np.asarray(kv_map)
  if attn_row.ndim != 2 or values.ndim != 3 or wo.ndim != 3 or u.ndim != 1:
    raise ValueError(
      f"need attn_row [H, K], values [KV, K, dh], wo [H, dh, d], u [d]; got "
      f"{attn_row.shape}, {values.shape}, {wo.shape}, {u.shape}"
    )
  H, K = attn_row.shape
  if (
    values.shape[1] != K
    or wo.shape[:2] != (H, values.shape[2])
    or wo.shape[2] != u.shape[0]
  ):
    raise ValueError(
      f"shapes disagree: attn_row [H={H}, K={K}], values [KV, K, dh] = "
      f"{values.shape}, wo [H, dh, d] = {wo.shape}, u [d] = {u.shape}"
    )
  if kv_map.shape != (H,) or not jnp.issubdtype(kv_map.dtype, jnp.integer):
    raise ValueError(
      f"kv_map must be int [H={H}], got {kv_map.dtype}{kv_map.shape}"
    )
  ok = val.debug_check_values(
    (kv_map >= 0) & (kv_map < values.shape[0]),
    f"kv_map entries must be KV head indices in [0, {values.shape[0]})",
  )
  u_hat = jnp.einsum("hkd,d->hk", wo, u)  # [H, dh]
  c = jnp.einsum("hjk,hk->hj", values[jnp.asarray(kv_map)], u_hat)  # [H, K]
  return val.poison_floats(attn_row * c, ok)


@jax.jit
def _phi_all_layers(attn, values, wo, u, kv_map):
  # attn [L, H, K], values [L, KV, K, dh], wo [L, H, dh, d], u [d]
  return jax.vmap(phi_per_position, in_axes=(0, 0, 0, None, None))(
    attn, values, wo, u, kv_map
  )


def contrast(
  weights: np.ndarray, needle: np.ndarray, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
  """(L⁺, L⁻) of per-key weights [..., K]: needle sum, and rescaled off-needle
  sum.

  L⁺ = Σ_{j∈needle} w_j and L⁻ = Σ_{j∉needle, valid} w_j · |needle| / (K_t − |needle|),
  K_t = #valid keys (the denominator is floored at 1). Host-side NumPy.

  Args:
    weights: [..., K] float per-key weights (φ of `phi_per_position`, or
      attention).
    needle: bool [K], the keys inside the needle span.
    valid: bool [K], the keys the query may attend to (real, causal).

  Returns:
    (L⁺, L⁻), each a float array of shape weights.shape[:-1].
  """
  needle, valid = np.asarray(needle), np.asarray(valid)
  if needle.dtype != np.bool_ or valid.dtype != np.bool_:
    raise TypeError(
      f"needle and valid must be bool masks, got {needle.dtype} and "
      f"{valid.dtype}"
    )
  if (
    needle.shape != valid.shape
    or needle.ndim != 1
    or np.shape(weights)[-1:] != needle.shape
  ):
    raise ValueError(
      f"needle and valid must be [K] matching weights [..., K]; got "
      f"{needle.shape}, {valid.shape}, {np.shape(weights)}"
    )
  n = needle.sum()
  k_t = valid.sum()
  lp = (weights * needle).sum(-1)
  off = (weights * (valid & ~needle)).sum(-1)
  lm_ = off * n / max(k_t - n, 1)
  return lp, lm_


# ---------------------------------------------------------------------------
# scoring one generation


def score_generation(
  *,
  params,
  config,
  trial: Trial,
  tokenizer,
  gen_ids,
  attn,
  values,
  key_pos,
  key_valid,
  prompt_len,
  rouge_threshold,
  post_norm="ignore",
  contrastive_top_k: int | None = 10,
):
  """All detectors of one trial from its recorded generation (host-side NumPy).

  The scoring half of :func:`detect_heads`, which calls it once per trial on the
  output of ``lm.generate(..., capture_attn=True, capture_values=True)``.

  Args:
    params: the LM's parameters; config: its ``LMConfig`` (L layers, H heads).
    trial: the trial (prompt ids, needle span, answer).
    tokenizer: decodes ``gen_ids``.
    gen_ids: the N generated token ids.
    attn: float [N, L, H, S] attention weights of each generated step over the S
      cache slots.
    values: f32 [L, KV, S, head_dim] the value vectors of every cache slot.
    key_pos: int [S] the position of each cache slot; key_valid: bool [S] the
      filled slots.
    prompt_len: the trial's prompt length (its first generated token predicts
      position ``prompt_len``).
    rouge_threshold: a trial is accepted when the answer's ROUGE-1 recall in the
      generation is above this and an answer step is found.
    post_norm: unused (kept for callers that pass it).
    contrastive_top_k: the contrastive detector's top-k overlap (None: the
      needle's mass).

  Returns:
    The trial's :class:`TrialScore` (each detector [L, H]).
  """
  L, H = config.n_layers, config.n_heads
  kv_map = np.arange(H) // config.group_size
  generation = tokenizer.decode(gen_ids)
  steps = answer_steps(gen_ids, trial.answer, tokenizer)
  # the reference's filter: recall strictly above the threshold, and answer
  # steps found
  accepted = rouge1_recall(trial.answer, generation) > rouge_threshold and bool(
    steps
  )
  s, e = trial.needle_span
  needle_all = key_valid & (key_pos >= s) & (key_pos < e)
  slot_token = np.full(key_pos.shape, -1, np.int64)
  prompt = np.asarray(trial.prompt_ids)
  in_prompt = key_valid & (key_pos < prompt_len)
  slot_token[in_prompt] = prompt[key_pos[in_prompt]]
  n_needle = max(e - s, 1)
  zeros = np.zeros((L, H), np.float64)
  det = {
    k: zeros.copy()
    for k in ("locos", "wu", "contrastive", "attention_spatial", "dla")
  }
  Lp, Lm = zeros.copy(), zeros.copy()
  n_steps = len(gen_ids)
  # stays on device: one row is read per answer step
  w_u = lm.unembedding(params, config)
  mass_per_step = []
  for t in range(n_steps):
    q_pos = prompt_len - 1 + t
    valid_t = key_valid & (key_pos <= q_pos)
    a = attn[t]  # [L, H, S]
    # Wu et al. retrieval score: arg-max key in the needle and its token == y_t
    j = a.argmax(-1)  # [L, H]
    hit = needle_all[j] & (slot_token[j] == gen_ids[t])
    det["wu"] += hit / n_needle
    mass_per_step.append(
      a[..., needle_all & valid_t].sum(-1)
      if contrastive_top_k is None
      else _topk_overlap(a, needle_all & valid_t, valid_t, contrastive_top_k)
    )
  for t in steps:
    q_pos = prompt_len - 1 + t
    valid_t = key_valid & (key_pos <= q_pos)
    needle_t = needle_all & valid_t
    u = w_u[gen_ids[t]]
    # [L, H, S]
    phi = np.asarray(_phi_all_layers(attn[t], values, params["wo"], u, kv_map))
    lp, lmn = contrast(phi, needle_t, valid_t)
    Lp += lp
    Lm += lmn
    det["dla"] += (phi * valid_t).sum(-1)
    ap, am = contrast(attn[t], needle_t, valid_t)
    det["attention_spatial"] += ap - am
  if steps:
    Lp /= len(steps)
    Lm /= len(steps)
    det["dla"] /= len(steps)
    det["attention_spatial"] /= len(steps)
  det["locos"] = Lp - Lm
  # contrastive attention: mean over answer steps minus mean over the other
  # steps
  if mass_per_step and steps:
    A = np.stack(mass_per_step)  # [N, L, H]
    ans = np.zeros(n_steps, bool)
    ans[steps] = True
    a_plus = A[ans].mean(0)
    if (~ans).sum() >= 1:
      det["contrastive"] = np.maximum(a_plus - A[~ans].mean(0), 0.0)
    else:
      det["contrastive"] = np.maximum(a_plus, 0.0)
  del post_norm
  return TrialScore(
    S=det["locos"],
    L_plus=Lp,
    L_minus=Lm,
    accepted=bool(accepted),
    generation=generation,
    answer_steps=steps,
    detectors=det,
  )


def _topk_overlap(a, needle, valid, k):
  a = np.where(valid, a, -np.inf)
  kk = min(k, int(valid.sum()))
  top = np.argpartition(-a, kk - 1, axis=-1)[..., :kk]
  return needle[top].sum(-1) / kk


def bucket_indices(
  lengths: Sequence[int], pad_to: int | Sequence[int] | None = None
) -> list[tuple[int, list[int]]]:
  """Group prompt indices by padded length, so a few compiled programs serve
  every prompt.

  Args:
    lengths: prompt lengths.
    pad_to: None (one group padded to the longest prompt), an int (every prompt
      padded to it), or a sequence of bucket lengths (each prompt goes to the
      smallest bucket that holds it).

  Returns:
    [(padded length, [indices])] in increasing length, indices in input order.
  """
  lengths = [int(n) for n in lengths]
  longest = max(lengths)
  if pad_to is None or isinstance(pad_to, (int, np.integer)):
    length = longest if pad_to is None else int(pad_to)
    if length < longest:
      raise ValueError(
        f"pad_to={length} is shorter than the longest prompt ({longest} tokens)"
      )
    return [(length, list(range(len(lengths))))]
  buckets = sorted(int(b) for b in pad_to)
  if not buckets or buckets[-1] < longest:
    raise ValueError(
      f"pad_to buckets {tuple(buckets)} must include a length >= the longest "
      f"prompt ({longest} tokens)"
    )
  groups: dict[int, list[int]] = {}
  for i, n in enumerate(lengths):
    groups.setdefault(next(b for b in buckets if b >= n), []).append(i)
  return sorted(groups.items())


def detect_heads(
  params: lm.Params,
  config: lm.LMConfig,
  trials: Sequence[Trial],
  tokenizer: TokenizerLike,
  *,
  max_steps: int = 50,
  stop_ids: Sequence[int] | None = None,
  rouge_threshold: float = 0.5,
  batch_size: int = 4,
  pad_to: int | Sequence[int] | None = None,
  post_norm: str = "ignore",
  contrastive: str = "mass",
  contrastive_top_k: int = 10,
) -> tuple[dict[str, np.ndarray], list[TrialScore]]:
  """Run every trial once (greedy, recording last-row attention and values) and
  score all heads with LOCOS and the baselines.

  Decoding protocol (spec §3.1): the prompt minus its last token is prefilled;
  decoding starts from the last prompt token for at most `max_steps` content
  steps and stops at a stop id (EOS / newline tokens), which is not recorded.

  Args:
    params: the model's weights (`jaxpapers.lm.Params`).
    config: the model's `jaxpapers.lm.LMConfig` (L = n_layers, H = n_heads).
    trials: the probes.
    tokenizer: the model's tokenizer (encode/decode).
    max_steps: maximum content steps.
    stop_ids: ids that end decoding; default: `tokenizer.stop_ids()`.
    rouge_threshold: accept a trial when ROUGE-1 recall of the answer is > this
      and answer steps were found (as the reference does); only accepted trials
      are averaged.
    batch_size: trials per generation call (left-padded to a common length).
    pad_to: an int (every prompt padded to it: one compilation for all batches),
      a sequence of bucket lengths (each prompt padded to the smallest bucket
      holding it; one compilation per bucket), or None (the longest prompt).
    post_norm: 'ignore' (reference parity). Models with a post-attention norm
      would need 'freeze'; not implemented for the supported architectures,
      which have no post-attention norm.
    contrastive: 'mass' (attention mass on the needle) or 'topk' (top-k
      overlap).
    contrastive_top_k: k for the 'topk' variant.

  Returns:
    (scores, per_trial): scores maps each detector ('locos', 'wu',
    'contrastive', 'attention_spatial', 'dla') to a float [L, H] array averaged
    over accepted trials (see `aggregate`); per_trial is one `TrialScore` per
    trial, in input order.

  Example:
    config, params, tokenizer = lm.load_smollm2()
    trials = make_probes(np.random.default_rng(0), tokenizer=tokenizer, num=32,
                         kind="nonliteral")
    scores, per_trial = detect_heads(params, config, trials, tokenizer, pad_to=(128, 256))
    best = rank_heads(scores["locos"])[:10]  # the ten (layer, head) pairs LOCOS ranks first
  """
  if post_norm != "ignore":
    raise NotImplementedError(
      "post_norm='freeze' is only meaningful for models with a "
      "post-attention norm, which this loader does not expose yet"
    )
  if contrastive not in ("mass", "topk"):
    raise ValueError(
      f"contrastive must be 'mass' or 'topk', got {contrastive!r}"
    )
  trials = list(trials)
  if not trials:
    raise ValueError("trials must be a non-empty sequence of Trial")
  if not all(isinstance(t, Trial) for t in trials):
    raise TypeError("trials must be Trial objects")
  for name, v in (
    ("max_steps", max_steps),
    ("batch_size", batch_size),
    ("contrastive_top_k", contrastive_top_k),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  if not 0.0 <= rouge_threshold <= 1.0:
    raise ValueError(
      f"rouge_threshold must be in [0, 1], got {rouge_threshold!r}"
    )
  _check_prompt_ids(trials, config)
  if stop_ids is None:
    stop_ids = tokenizer.stop_ids()
  per_trial: list[TrialScore | None] = [None] * len(trials)
  for length, idx in bucket_indices(
    [len(t.prompt_ids) for t in trials], pad_to
  ):
    for i in range(0, len(idx), batch_size):
      chunk_idx = idx[i : i + batch_size]
      rows = [trials[j].prompt_ids for j in chunk_idx]
      rows = rows + [rows[-1]] * (batch_size - len(rows))
      ids, mask = lm.left_pad(rows, length=length)
      g = lm.generate(
        params,
        ids,
        config=config,
        prompt_mask=mask,
        max_new_tokens=max_steps,
        stop_ids=stop_ids,
        capture_attn=True,
        capture_values=True,
      )
      scored = score_batch(
        g,
        [trials[j] for j in chunk_idx],
        params=params,
        config=config,
        tokenizer=tokenizer,
        rouge_threshold=rouge_threshold,
        contrastive_top_k=None if contrastive == "mass" else contrastive_top_k,
      )
      for j, score in zip(chunk_idx, scored, strict=True):
        per_trial[j] = score
  scored = [s for s in per_trial if s is not None]
  assert len(scored) == len(trials)  # every trial lies in exactly one bucket
  return aggregate(scored, config), scored


def score_batch(
  generation: lm.Generation,
  trials: Sequence[Trial],
  *,
  params: lm.Params,
  config: lm.LMConfig,
  tokenizer: TokenizerLike,
  rouge_threshold: float = 0.5,
  contrastive_top_k: int | None = None,
) -> list[TrialScore]:
  """Scores the first ``len(trials)`` rows of one captured generation batch.

  The host-side half of :func:`detect_heads` for one batch: row b of
  ``generation`` is trial b's greedy continuation, and
  :func:`score_generation` scores it from the row's recorded attention and
  values (rows past the trials, a batch's padding, are not read).

  Args:
    generation: the output of ``lm.generate(..., capture_attn=True,
      capture_values=True)`` on the trials' left-padded prompts (B >=
      len(trials) rows; device or NumPy arrays).
    trials: the trials of the batch's first rows, in row order.
    params: the LM's parameters; config: its ``LMConfig``.
    tokenizer: decodes the generated ids.
    rouge_threshold: see :func:`detect_heads`.
    contrastive_top_k: the contrastive detector's top-k overlap (None: the
      needle's mass, :func:`detect_heads`' default).

  Returns:
    One :class:`TrialScore` per trial, in the trials' order.

  Raises:
    ValueError: the generation was run without capturing attention and values,
      or has fewer rows than there are trials.
  """
  trials = list(trials)
  if generation.attn is None or generation.values is None:
    raise ValueError(
      "generation must be captured with capture_attn=True and "
      "capture_values=True"
    )
  rows = int(np.shape(generation.tokens)[0])
  if len(trials) > rows:
    raise ValueError(
      f"trials: got {len(trials)} trials for a generation of {rows} rows"
    )
  g = jax.tree.map(np.asarray, generation)
  out = []
  for b, trial in enumerate(trials):
    n = int(g.num_steps[b])
    out.append(
      score_generation(
        params=params,
        config=config,
        trial=trial,
        tokenizer=tokenizer,
        gen_ids=[int(i) for i in g.tokens[b, :n]],
        attn=g.attn[b, :n].astype(np.float64),
        values=g.values[b],
        key_pos=g.key_pos[b],
        key_valid=g.key_valid[b],
        prompt_len=len(trial.prompt_ids),
        rouge_threshold=rouge_threshold,
        contrastive_top_k=contrastive_top_k,
      )
    )
  return out


def _check_prompt_ids(trials, config):
  vocab = int(config.vocab_size)
  for t in trials:
    if not t.prompt_ids:
      raise ValueError("every trial needs a non-empty prompt_ids")
    if min(t.prompt_ids) < 0 or max(t.prompt_ids) >= vocab:
      raise ValueError(
        f"prompt_ids must be token ids in [0, vocab_size={vocab}), got range "
        f"[{min(t.prompt_ids)}, {max(t.prompt_ids)}]"
      )


def aggregate(
  per_trial: Sequence[TrialScore], config: lm.LMConfig
) -> dict[str, np.ndarray]:
  """Mean of each detector over accepted trials (S_{l,h} = mean of S_τ for
  LOCOS).

  When no trial was accepted nothing was measured and every detector is all
  zeros [L, H] (a documented degenerate value: no head is preferred).

  Args:
    per_trial: the trials' scores, as returned by `detect_heads`.
    config: the model's config (gives L = n_layers, H = n_heads for the
      all-zeros case).

  Returns:
    Detector name ('locos', 'wu', 'contrastive', 'attention_spatial', 'dla') ->
    float [L, H].
  """
  per_trial = list(per_trial)
  if not all(isinstance(t, TrialScore) for t in per_trial):
    raise TypeError("per_trial must be a sequence of TrialScore")
  acc = [t for t in per_trial if t.accepted]
  names = ("locos", "wu", "contrastive", "attention_spatial", "dla")
  if not acc:
    return {k: np.zeros((config.n_layers, config.n_heads)) for k in names}
  return {k: np.mean([t.detectors[k] for t in acc], axis=0) for k in names}


def locos_trial(
  params: lm.Params,
  config: lm.LMConfig,
  trial: Trial,
  tokenizer: TokenizerLike,
  *,
  max_steps: int = 50,
  post_norm: str = "ignore",
  stop_ids: Sequence[int] | None = None,
  rouge_threshold: float = 0.5,
) -> TrialScore:
  """LOCOS (and baselines) for one trial; see `detect_heads`.

  Args:
    params: the model's weights.
    config: the model's config.
    trial: the probe.
    tokenizer: the model's tokenizer.
    max_steps: maximum content steps.
    post_norm: 'ignore' (the only supported value; see `detect_heads`).
    stop_ids: ids that end decoding; default `tokenizer.stop_ids()`.
    rouge_threshold: the acceptance threshold of `detect_heads`.

  Returns:
    The trial's `TrialScore` (S_τ and the baselines, each [L, H]).
  """
  _, per = detect_heads(
    params,
    config,
    [trial],
    tokenizer,
    max_steps=max_steps,
    stop_ids=stop_ids,
    rouge_threshold=rouge_threshold,
    batch_size=1,
    post_norm=post_norm,
  )
  return per[0]


def locos_scores(
  params: lm.Params,
  config: lm.LMConfig,
  trials: Sequence[Trial],
  tokenizer: TokenizerLike,
  *,
  rouge_threshold: float = 0.5,
  **kwargs,
) -> np.ndarray:
  """S_{l,h}: LOCOS averaged over accepted trials.

  Args:
    params: the model's weights.
    config: the model's config.
    trials: the probes.
    tokenizer: the model's tokenizer.
    rouge_threshold: the acceptance threshold of `detect_heads`.
    **kwargs: the other keyword arguments of `detect_heads`.

  Returns:
    float [L, H], the LOCOS score of every head.
  """
  scores, _ = detect_heads(
    params, config, trials, tokenizer, rouge_threshold=rouge_threshold, **kwargs
  )
  return scores["locos"]


# ---------------------------------------------------------------------------
# head selection


def top_heads(scores: ArrayLike, k: int) -> np.ndarray:
  """The k highest-scoring heads as a mask (ties broken by the lower flat
  index).

  Args:
    scores: finite float [L, H] head scores.
    k: number of heads to mark, in [0, L·H].

  Returns:
    bool [L, H], True on exactly k heads.
  """
  scores = _check_scores(scores)
  if (
    isinstance(k, (bool, np.bool_))
    or not isinstance(k, (int, np.integer))
    or not 0 <= k <= scores.size
  ):
    raise ValueError(f"k must be in [0, {scores.size}], got {k}")
  order = np.argsort(-scores.ravel(), kind="stable")[:k]
  mask = np.zeros(scores.size, bool)
  mask[order] = True
  return mask.reshape(scores.shape)


def _check_scores(scores):
  scores = np.asarray(scores)
  if scores.ndim != 2:
    raise ValueError(f"scores must be [L, H], got shape {scores.shape}")
  if not np.issubdtype(scores.dtype, np.number) or not np.all(
    np.isfinite(scores)
  ):
    raise ValueError(
      "scores must be finite numbers (NaN would rank arbitrarily)"
    )
  return scores


def rank_heads(scores: ArrayLike) -> list[tuple[int, int]]:
  """Every head, best first.

  Args:
    scores: finite float [L, H] head scores.

  Returns:
    All L·H (layer, head) pairs in descending score order (ties: lower flat
    index first).
  """
  scores = _check_scores(scores)
  order = np.argsort(-scores.ravel(), kind="stable")
  # (layer, head), C order
  return [divmod(int(i), scores.shape[1]) for i in order]


def random_heads(
  key: jax.Array, num_layers: int, num_heads: int, k: int
) -> np.ndarray:
  """k heads drawn uniformly without replacement (the random-ablation control).

  Args:
    key: a JAX PRNG key.
    num_layers: L (>= 1).
    num_heads: H, query heads per layer (>= 1).
    k: number of heads, in [0, L·H].

  Returns:
    bool [L, H], True on exactly k heads.
  """
  for name, v in (
    ("num_layers", num_layers),
    ("num_heads", num_heads),
    ("k", k),
  ):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
      raise ValueError(f"{name} must be an int, got {v!r}")
  if num_layers < 1 or num_heads < 1:
    raise ValueError(
      f"num_layers and num_heads must be >= 1, got {num_layers}, {num_heads}"
    )
  if not 0 <= k <= num_layers * num_heads:
    raise ValueError(f"k must be in [0, {num_layers * num_heads}], got {k}")
  idx = np.asarray(jax.random.permutation(key, num_layers * num_heads))[:k]
  mask = np.zeros(num_layers * num_heads, bool)
  mask[idx] = True
  return mask.reshape(num_layers, num_heads)


def jaccard_top_k(a: ArrayLike, b: ArrayLike, k: int) -> float:
  """Agreement of two detectors: |top_k(a) ∩ top_k(b)| / |top_k(a) ∪ top_k(b)|.

  Args:
    a: finite float [L, H] head scores of one detector.
    b: finite float [L, H] head scores of another.
    k: heads taken from each (see `top_heads`).

  Returns:
    The Jaccard index in [0, 1]; 1.0 for k = 0.
  """
  if np.shape(a) != np.shape(b):
    raise ValueError(
      f"a and b must have the same shape [L, H], got {np.shape(a)} and "
      f"{np.shape(b)}"
    )
  ma, mb = top_heads(a, k), top_heads(b, k)
  union = (ma | mb).sum()
  return float((ma & mb).sum() / union) if union else 1.0
