"""Bayes-factor utility of memory turns, scored in batch with a decoder LM.

The paper (arXiv 2606.02976) defines the utility of a memory turn m_i as a Bayes
factor: the improvement in the model's likelihood of the reference response y
when the turn is in context. In log form (the insertion variant, the default
here)

  LBF_i = log p(y | m_i, x) - log p(y | ∅, x),   log p(y | c) = Σ_t log p(y_t | c, y_<t).

One dialogue question becomes one padded batch of rows: row 0 is the baseline
context (no memory, or a placebo turn of similar length), rows 1..n_max hold one
turn each. The response is tokenised separately from the prompt and appended, so
y has the same tokens in every row; rows are right-padded; logits are computed
only at the positions that predict y (gathered before the unembedding, which is
49,152 x 576 for SmolLM2).

Reconstructions (the abstract does not pin them down): the prompt template, the
memory block's wording, the placebo turn, the leave-one-out variant and the
threshold gate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxpapers.core import validation as V

if TYPE_CHECKING:
  from jaxpapers import lm

LogprobFn = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


class TextEncoder(Protocol):
  """What the batch builders need of a tokenizer (``jaxpapers.lm.Tokenizer``,
  ``WordTokenizer``)."""

  def encode(self, text: str, *, add_bos: bool | None = ...) -> list[int]: ...


# ChatML, as SmolLM2-Instruct is trained with; {memory} and {x} are filled in.
CHATML_TEMPLATE = "<|im_start|>system\n{memory}<|im_end|>\n<|im_start|>user\n{x}<|im_end|>\n<|im_start|>assistant\n"
_BASELINES = ("empty", "placebo")


def memory_block(turns: Sequence[str]) -> str:
  """The text of the memory block for ``turns`` (oldest first); reconstruction.

  Args:
    turns: the memory turns, oldest first (a sequence of str, not one str).

  Returns:
    ``'Notes about the user: none.'`` for no turn, otherwise
    ``'Notes about the user:'`` followed by one ``- turn`` line per turn.
  """
  if isinstance(turns, str):
    raise TypeError("turns must be a sequence of str, got a single str")
  turns = list(turns)
  for t in turns:
    if not isinstance(t, str):
      raise TypeError(
        "turns must be a sequence of str, got an item of type "
        f"{type(t).__name__}"
      )
  if not turns:
    return "Notes about the user: none."
  return "Notes about the user:\n" + "\n".join(f"- {t}" for t in turns)


@struct.dataclass
class ScoringBatch:
  """Rows to score (right-padded).

  Attributes:
    ids: int32 [R, L] token ids (0 in padding).
    attn_mask: bool [R, L], True on real tokens.
    target_mask: bool [R, L], True on the response tokens y (scored).
    turn_valid: bool [R - 1], whether row i + 1 holds a real turn (False for
      padding rows).
  """

  ids: jax.Array
  attn_mask: jax.Array
  target_mask: jax.Array
  turn_valid: jax.Array


def encode_rows(
  tokenizer: TextEncoder,
  contexts: Sequence[Sequence[str]],
  x: str,
  y: str,
  *,
  max_len: int,
  template: str = CHATML_TEMPLATE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Token rows ``template(memory_block(c), x) + y`` for each context c
  (host-side).

  The prompt and y are tokenised separately and concatenated, so a BPE merge
  across the boundary cannot change y's tokens between rows.

  Args:
    tokenizer: has ``encode(text, add_bos=...) -> list[int]``.
    contexts: one list of memory turns per row.
    x: the user's input.
    y: the response to score.
    max_len: L, the padded row length (static bucket).
    template: a string with ``{memory}`` and ``{x}`` placeholders.

  Returns:
    (ids int32 [R, L], attn_mask bool [R, L], target_mask bool [R, L]).

  Raises:
    ValueError: a row longer than ``max_len``, an empty y, or a template without
      the placeholders.
  """
  max_len = V.check_int(max_len, "max_len", min_value=2)
  for name, s in (("x", x), ("y", y), ("template", template)):
    if not isinstance(s, str):
      raise TypeError(f"{name} must be a str, got {type(s).__name__}")
  if "{memory}" not in template or "{x}" not in template:
    raise ValueError("template must contain the placeholders {memory} and {x}")
  y_ids = tokenizer.encode(y, add_bos=False)
  if not y_ids:
    raise ValueError("y must tokenise to at least one token")
  R = len(contexts)
  ids = np.zeros((R, max_len), np.int32)
  attn = np.zeros((R, max_len), bool)
  tgt = np.zeros((R, max_len), bool)
  for r, c in enumerate(contexts):
    p = tokenizer.encode(
      template.format(memory=memory_block(c), x=x), add_bos=True
    )
    row = p + y_ids
    if len(row) > max_len:
      raise ValueError(
        f"row {r} has {len(row)} tokens > max_len={max_len}; "
        "use a larger bucket"
      )
    ids[r, : len(row)] = row
    attn[r, : len(row)] = True
    tgt[r, len(p) : len(row)] = True
  return ids, attn, tgt


def build_scoring_batch(
  tokenizer: TextEncoder,
  turns: Sequence[str],
  x: str,
  y: str,
  *,
  max_len: int,
  n_max: int,
  baseline: str = "empty",
  placebo: str = "I said something earlier today.",
  template: str = CHATML_TEMPLATE,
) -> ScoringBatch:
  """The insertion batch of one question: row 0 the baseline, row i + 1 the turn
  i alone.

  Args:
    tokenizer: has ``encode(text, add_bos=...)``.
    turns: the N <= n_max history turns.
    x: the user's input.
    y: the reference response.
    max_len: L (static bucket).
    n_max: turns per batch (static); rows N + 1 .. n_max repeat the baseline,
      invalid.
    baseline: 'empty' (no memory) or 'placebo' (the neutral ``placebo`` turn).
    placebo: the placebo turn's text.
    template: see :func:`encode_rows`.

  Returns:
    A :class:`ScoringBatch` with R = n_max + 1 rows.
  """
  n_max = V.check_int(n_max, "n_max", min_value=1)
  if baseline not in _BASELINES:
    raise ValueError(f"baseline must be one of {_BASELINES}, got {baseline!r}")
  turns = list(turns)
  if len(turns) > n_max:
    raise ValueError(f"turns has {len(turns)} entries > n_max={n_max}")
  base = [] if baseline == "empty" else [placebo]
  contexts = [base] + [[t] for t in turns] + [base] * (n_max - len(turns))
  ids, attn, tgt = encode_rows(
    tokenizer, contexts, x, y, max_len=max_len, template=template
  )
  valid = np.arange(n_max) < len(turns)
  return ScoringBatch(
    jnp.asarray(ids), jnp.asarray(attn), jnp.asarray(tgt), jnp.asarray(valid)
  )


def build_loo_batch(
  tokenizer: TextEncoder,
  turns: Sequence[str],
  x: str,
  y: str,
  *,
  max_len: int,
  n_max: int,
  template: str = CHATML_TEMPLATE,
) -> ScoringBatch:
  """The leave-one-out batch: row 0 the whole history H, row i + 1 the history H
  without turn i.

  Args:
    tokenizer: has ``encode(text, add_bos=...)``.
    turns: the N <= n_max history turns.
    x: the user's input.
    y: the reference response.
    max_len: L (static bucket); the whole history must fit.
    n_max: turns per batch (static); rows N + 1 .. n_max repeat row 0, invalid.
    template: see :func:`encode_rows`.

  Returns:
    A :class:`ScoringBatch` with R = n_max + 1 rows (the layout of
    :func:`build_scoring_batch`).
  """
  n_max = V.check_int(n_max, "n_max", min_value=1)
  turns = list(turns)
  if len(turns) > n_max:
    raise ValueError(f"turns has {len(turns)} entries > n_max={n_max}")
  contexts = [turns] + [turns[:i] + turns[i + 1 :] for i in range(len(turns))]
  contexts += [turns] * (n_max - len(turns))
  ids, attn, tgt = encode_rows(
    tokenizer, contexts, x, y, max_len=max_len, template=template
  )
  valid = np.arange(n_max) < len(turns)
  return ScoringBatch(
    jnp.asarray(ids), jnp.asarray(attn), jnp.asarray(tgt), jnp.asarray(valid)
  )


def _check_rows(ids, attn_mask, target_mask):
  ids = V.check_array(ids, "ids", dtype="int", ndim=2)
  attn_mask = V.check_array(
    attn_mask, "attn_mask", dtype="bool", shape=ids.shape
  )
  target_mask = V.check_array(
    target_mask, "target_mask", dtype="bool", shape=ids.shape
  )
  return ids, attn_mask, target_mask


def sequence_logprobs(
  params: lm.Params,
  ids: jax.Array,
  attn_mask: jax.Array,
  target_mask: jax.Array,
  *,
  config: lm.LMConfig,
  max_targets: int,
  gather: bool = True,
) -> jax.Array:
  """Σ_t log p(y_t | prefix, y_<t) per row, the response positions given by ``target_mask``.

  With ``gather=True`` the final hidden states are gathered at the
  ``max_targets`` positions that predict a target before the unembedding
  (``jaxpapers.lm.forward(logits_at=...)``); ``gather=False`` computes logits at
  every position (the reference path, ~25% more FLOPs for SmolLM2 at L = 128).

  Args:
    params: ``jaxpapers.lm`` parameters.
    ids: int [R, L] right-padded token ids.
    attn_mask: bool [R, L].
    target_mask: bool [R, L]; a target's predicting position (t - 1) must be a
      real token, so position 0 may not be a target.
    config: the ``jaxpapers.lm.LMConfig`` (static).
    max_targets: P >= the number of targets in any row (static).
    gather: gather before the unembedding (static).

  Returns:
    float32 [R].

  Raises:
    ValueError: bad shapes or dtypes; eagerly, a row with more than
      ``max_targets`` targets, a target at position 0 or on padding, or a token
      id outside the vocabulary.

  Under jit: those value errors make the whole output NaN.
  """
  concrete = all(
    isinstance(a, np.ndarray) for a in (ids, attn_mask, target_mask)
  )
  ids, attn_mask, target_mask = _check_rows(ids, attn_mask, target_mask)
  max_targets = V.check_int(max_targets, "max_targets", min_value=1)
  # NumPy inputs are checked in NumPy (no small XLA programs compiled per bucket
  # shape).
  xp, (i_, a_, t_) = (
    (np, _as_np(ids, attn_mask, target_mask))
    if concrete
    else (jnp, (ids, attn_mask, target_mask))
  )
  ok = V.check_values(
    xp.all(t_.sum(1) <= max_targets),
    f"target_mask has a row with more than max_targets={max_targets} targets",
  )
  ok2 = V.check_values(
    xp.all(~t_[:, 0]) & xp.all(~t_ | a_),
    "target_mask must be False at position 0 and on padding (attn_mask False)",
  )
  ok3 = V.check_values(
    xp.all((i_ >= 0) & (i_ < config.vocab_size)),
    f"ids must be token ids in [0, vocab_size={config.vocab_size})",
  )
  out = _logprobs_jit(
    params,
    ids,
    attn_mask,
    target_mask,
    config=config,
    max_targets=max_targets,
    gather=gather,
  )
  return V.poison(out, _all_ok(ok, ok2, ok3))


def _as_np(*xs):
  return tuple(np.asarray(x) for x in xs)


def _all_ok(*oks):
  flags = [o for o in oks if o is not True]
  if not flags:
    return True
  out = flags[0]
  for f in flags[1:]:
    out = out & f
  return out


@functools.partial(jax.jit, static_argnames=("config", "max_targets", "gather"))
def _logprobs_jit(
  params, ids, attn_mask, target_mask, *, config, max_targets, gather
):
  from jaxpapers import lm

  # Positions of the first P targets (stable sort puts True first), and their
  # predictors.
  order = jnp.argsort(~target_mask, axis=1, stable=True)[:, :max_targets]
  valid = jnp.take_along_axis(target_mask, order, axis=1)
  tok = jnp.take_along_axis(ids, order, axis=1)
  pred = jnp.maximum(order - 1, 0)
  if gather:
    logits, _, _ = lm.forward(
      params, ids, config=config, mask=attn_mask, logits_at=pred
    )
  else:
    full, _, _ = lm.forward(params, ids, config=config, mask=attn_mask)
    logits = jnp.take_along_axis(
      cast(jax.Array, full), pred[:, :, None], axis=1
    )
  # forward gives logits unless logits_at="none"
  logits = cast(jax.Array, logits)
  logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  lp = jnp.take_along_axis(logp, tok[:, :, None], axis=-1)[..., 0]
  return jnp.sum(jnp.where(valid, lp, 0.0), axis=1)


def make_logprob_fn(
  params: lm.Params,
  config: lm.LMConfig,
  *,
  max_targets: int,
  gather: bool = True,
) -> LogprobFn:
  """A :data:`LogprobFn` closure over ``jaxpapers.lm`` parameters (jitted once
  per shape).

  Args:
    params: ``jaxpapers.lm`` parameters.
    config: their ``LMConfig``.
    max_targets: P >= the number of targets in any row (see
      :func:`sequence_logprobs`).
    gather: gather before the unembedding (see :func:`sequence_logprobs`).

  Returns:
    ``fn(ids [R, L], attn_mask [R, L], target_mask [R, L]) -> [R]`` summed log-probs.
  """
  max_targets = V.check_int(max_targets, "max_targets", min_value=1)
  return functools.partial(
    sequence_logprobs,
    params,
    config=config,
    max_targets=max_targets,
    gather=gather,
  )


def _check_batch(batch):
  if not isinstance(batch, ScoringBatch):
    raise TypeError(f"batch must be a ScoringBatch, got {type(batch).__name__}")
  ids, attn, tgt = _check_rows(batch.ids, batch.attn_mask, batch.target_mask)
  R = ids.shape[0]
  valid = V.check_array(
    batch.turn_valid, "batch.turn_valid", dtype="bool", shape=(R - 1,)
  )
  if R < 2:
    raise ValueError(
      f"batch must have at least 2 rows (baseline + one turn), got {R}"
    )
  return ids, attn, tgt, valid


def _normalise(diff, tgt, per_token):
  if not per_token:
    return diff
  return diff / jnp.maximum(tgt[1:].sum(1), 1).astype(diff.dtype)


def log_bayes_factors(
  logprob_fn: LogprobFn, batch: ScoringBatch, *, per_token: bool = False
) -> jax.Array:
  """Insertion log Bayes factors LBF_i = log p(y | m_i, x) - log p(y | baseline, x).

  Args:
    logprob_fn: ``(ids, attn_mask, target_mask) -> [R]`` summed log-probs
      (:func:`make_logprob_fn`).
    batch: a :class:`ScoringBatch` from :func:`build_scoring_batch` (row 0 the
      baseline).
    per_token: divide by the number of response tokens T.

  Returns:
    float32 [R - 1]; padding turns are -inf.

  Example:
    config, params, tokenizer = lm.load_smollm2()
    dialogue = make_preference_dialogues(0, n_dialogues=1)[0]
    q = dialogue.queries[0]
    batch = build_scoring_batch(tokenizer, dialogue.turns, q.x, q.y, max_len=256, n_max=8)
    lbf = log_bayes_factors(make_logprob_fn(params, config, max_targets=32), batch)  # [8]
    access, idx, idx_valid = access_and_select(lbf, batch.turn_valid, k=2)
  """
  ids, attn, tgt, valid = _check_batch(batch)
  lp = logprob_fn(ids, attn, tgt)
  diff = _normalise(lp[1:] - lp[0], tgt, per_token)
  return jnp.where(valid, diff, -jnp.inf)


def loo_log_bayes_factors(
  logprob_fn: LogprobFn, batch_loo: ScoringBatch, *, per_token: bool = False
) -> jax.Array:
  """Leave-one-out log Bayes factors LOO_i = log p(y | H, x) - log p(y | H without m_i, x).

  A stale preference scores negative when the newer one is in H (removing it
  helps).

  Args:
    logprob_fn: see :func:`log_bayes_factors`.
    batch_loo: from :func:`build_loo_batch` (row 0 the whole history).
    per_token: divide by T.

  Returns:
    float32 [R - 1]; padding turns are -inf.
  """
  ids, attn, tgt, valid = _check_batch(batch_loo)
  lp = logprob_fn(ids, attn, tgt)
  diff = _normalise(lp[0] - lp[1:], tgt, per_token)
  return jnp.where(valid, diff, -jnp.inf)


def access_and_select(
  lbf: jax.Array, valid: jax.Array, *, tau: float = 0.0, k: int = 1
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Access gate and selection from one utility vector (the abstract's unified
  signal).

  access = 1[max_{valid i} LBF_i > tau]; selection = the top-k valid turns with
  LBF_i > tau, in decreasing LBF order.

  Args:
    lbf: float [..., N] utilities (log Bayes factors or a learned estimate).
    valid: bool [..., N].
    tau: threshold (static float).
    k: turns to select (static, 1 <= k <= N).

  Returns:
    (access bool [...], idx int32 [..., k], idx_valid bool [..., k]); idx_valid
    is False for slots past the turns clearing tau.

  Raises:
    ValueError: bad shapes, k out of range; eagerly, NaN in the valid utilities.

  Under jit: NaN utilities poison nothing but yield access False and idx -1
  (indices are integers; see the bad-input policy).
  """
  lbf = V.check_array(lbf, "lbf", dtype="float", ndim=range(1, 8))
  valid = V.check_array(valid, "valid", dtype="bool", shape=lbf.shape)
  tau = V.check_float(tau, "tau", allow_inf=True)
  k = V.check_int(k, "k", min_value=1, max_value=lbf.shape[-1])
  ok = V.check_values(
    ~jnp.any(jnp.isnan(lbf) & valid), "lbf must not be NaN at valid turns"
  )
  keep = valid & (lbf > tau)
  s = jnp.where(keep, lbf, -jnp.inf)
  top, idx = jax.lax.top_k(s, k)
  idx_valid = top > -jnp.inf
  access = jnp.any(keep, axis=-1)
  if ok is not True:
    access = access & ok
    idx = jnp.where(ok, idx, -1)
    idx_valid = idx_valid & ok
  return access, idx.astype(jnp.int32), idx_valid


MODELS = ("smollm2", "tiny")


def load_model(
  model: str, *, seed: int = 0
) -> tuple[lm.LMConfig, lm.Params, TextEncoder]:
  """The decoder LM the Bayes factors are scored with.

  Args:
    model: ``"smollm2"``: SmolLM2-135M-Instruct
      (:func:`jaxpapers.lm.load_smollm2`); ``"tiny"``: a random 2-layer decoder
      over a 257-word vocabulary with a :class:`WordTokenizer`, for smoke runs
      and tests (initialised in NumPy, so no per-shape random-number programs
      are compiled).
    seed: the tiny model's initialisation seed (unused for SmolLM2).

  Returns:
    ``(config, params, tokenizer)``.

  Raises:
    ValueError: ``model`` is not one of :data:`MODELS`.
  """
  from jaxpapers import lm
  from jaxpapers.bayes_memory._data import WordTokenizer

  if model not in MODELS:
    raise ValueError(f"model must be one of {MODELS}, got {model!r}")
  if model == "smollm2":
    return lm.load_smollm2()
  cfg = lm.LMConfig(
    vocab_size=257,
    d_model=32,
    n_layers=2,
    n_heads=4,
    n_kv_heads=2,
    head_dim=8,
    ffn_dim=32,
  )
  rng = np.random.default_rng(seed)
  params = {
    k: jnp.asarray(
      np.ones(shp, np.float32)
      if "norm" in k
      else 0.3 * rng.normal(size=shp).astype(np.float32)
    )
    for k, shp in lm.param_shapes(cfg).items()
  }
  return cfg, params, WordTokenizer(cfg.vocab_size)
