"""Jitted generation with a KV cache, and query statistics for ablations."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.lm._attention import resolve_impl
from jaxpapers.lm._config import LMConfig
from jaxpapers.lm._model import (
  Capture,
  HeadAblation,
  Params,
  _check_ablation,
  _check_tokens,
  _forward,
  _left_pad_columns,
  init_cache,
  pad_target,
  validate_params,
)


class Generation(NamedTuple):
  """Result of `generate`.

  Attributes:
    tokens: int32 [B, N]; content tokens, -1 after a row stopped. Stop tokens
      are never included.
    num_steps: int32 [B], the number of content tokens per row.
    attn: f32 [B, N, L, H, S] or None; row t is the last-query attention that
      produced token t (over S cache slots; slot j holds position
      key_pos[:, j]).
    values: f32 [B, L, KV, S, dh] or None; value vectors of every cache slot.
    key_pos: int32 [B, S], absolute position of each cache slot.
    key_valid: bool [B, S], slots holding a token fed to the model.
  """

  tokens: jax.Array
  num_steps: jax.Array
  attn: jax.Array | None
  values: jax.Array | None
  key_pos: jax.Array
  key_valid: jax.Array


@functools.partial(
  jax.jit,
  static_argnames=(
    "config",
    "max_new_tokens",
    "capture_attn",
    "capture_values",
    "attention",
    "block_size",
  ),
)
def _generate_jit(
  params,
  prompt,
  mask,
  stop_ids,
  temperature,
  key,
  ablation,
  row_ok,
  *,
  config,
  max_new_tokens,
  capture_attn,
  capture_values,
  attention="auto",
  block_size=None,
):
  B, P = prompt.shape
  N = max_new_tokens
  S = P + N
  dtype = params["wk"].dtype
  cache = init_cache(config, B, S, dtype)
  if P > 1:
    _, cache, _ = _forward(
      params,
      prompt[:, :-1],
      config=config,
      mask=mask[:, :-1],
      cache=cache,
      ablation=ablation,
      logits_mode="none",
      attention=attention,
      block_size=block_size,
    )
    assert cache is not None  # a cache in, its update out
  step_capture = Capture(attn="last" if capture_attn else "none")
  L, H = config.n_layers, config.n_heads
  attn_buf = jnp.zeros((N, B, L, H, S), jnp.float32) if capture_attn else None

  def cond(state):
    step, _, _, done, *_ = state
    return (step < N) & ~jnp.all(done)

  def body(state):
    step, cur, cache, done, toks, nsteps, attn_buf = state
    logits, cache, cap = _forward(
      params,
      cur[:, None],
      config=config,
      cache=cache,
      capture=step_capture,
      ablation=ablation,
      logits_mode="last",
    )
    # 'last' logits, and a cache in and out
    assert logits is not None and cache is not None
    greedy = jnp.argmax(logits, axis=-1).astype(jnp.int32)
    t = jnp.maximum(temperature, 1e-6)
    sampled = jax.random.categorical(
      jax.random.fold_in(key, step), logits / t
    ).astype(jnp.int32)
    nxt = jnp.where(temperature > 0, sampled, greedy)
    is_stop = jnp.any(nxt[:, None] == stop_ids[None, :], axis=1)
    # NaN logits never become a token
    bad = ~jnp.all(jnp.isfinite(logits), axis=-1)
    now_done = done | is_stop | bad
    toks = toks.at[:, step].set(jnp.where(now_done, -1, nxt))
    nsteps = nsteps + (~now_done).astype(jnp.int32)
    if attn_buf is not None:
      attn_buf = attn_buf.at[step].set(cap["attn"])
    return step + 1, nxt, cache, now_done, toks, nsteps, attn_buf

  state = (
    jnp.zeros((), jnp.int32),
    prompt[:, -1],
    cache,
    ~row_ok,
    jnp.full((B, N), -1, jnp.int32),
    jnp.zeros((B,), jnp.int32),
    attn_buf,
  )
  _, _, cache, _, toks, nsteps, attn_buf = jax.lax.while_loop(cond, body, state)
  values = (
    jnp.moveaxis(jnp.swapaxes(cache.v, 2, 3), 0, 1).astype(jnp.float32)
    if capture_values
    else None
  )  # [B, L, KV, S, dh]
  # with capture_attn
  attn = jnp.moveaxis(attn_buf, 0, 1) if attn_buf is not None else None
  return Generation(toks, nsteps, attn, values, cache.pos, cache.valid)


def generate(
  params: Params,
  prompt_ids: ArrayLike,
  *,
  config: LMConfig,
  max_new_tokens: int,
  prompt_mask: ArrayLike | None = None,
  stop_ids: Sequence[int] = (),
  temperature: float | jax.Array = 0.0,
  key: jax.Array | None = None,
  capture_attn: bool = False,
  capture_values: bool = False,
  ablation: HeadAblation | None = None,
  attention: str = "auto",
  block_size: int | None = None,
  pad_to: int | str | None = None,
) -> Generation:
  """Greedy or temperature sampling with a KV cache, as one jitted while-loop.

  The prompt minus its last token is prefilled; then every step feeds one token
  (starting with the last prompt token), so step t's last-row attention is the
  one that produced generated token t. Rows stop independently at any id in
  `stop_ids` (which is not recorded); the loop ends when every row stopped or
  after `max_new_tokens` steps.

  Args:
    params: model parameters.
    prompt_ids: int [B, P] left-padded prompts (see `left_pad`) or [P].
    config: the model's LMConfig.
    max_new_tokens: N, static.
    prompt_mask: bool [B, P]; the last column must be all True (left padding).
    stop_ids: ids that end a row (e.g. EOS and newline tokens).
    temperature: 0 for greedy; > 0 samples from softmax(logits / temperature).
    key: PRNG key for sampling (required when temperature > 0).
    capture_attn: record the last-row attention of every layer and head per
      step.
    capture_values: return the value vectors of every cache slot.
    ablation: optional HeadAblation applied at every position.
    attention: 'auto', 'dense' or 'blockwise' attention for the prefill (static;
      see `forward`: 'auto' is blockwise from `BLOCKWISE_MIN_QUERIES` (128)
      prompt tokens on). Decode steps have one query row, whose dense scores
      [B, H, 1, S] are already linear in S.
    block_size: tile size of the blockwise prefill (static); None:
      `auto_block_size`.
    pad_to: None (no padding), an int P' >= P, or 'bucket' (P' =
      `bucket_length(P)`): the prompts are left-padded to P' columns (masked
      out) before the jitted call, so every prompt length in a bucket reuses one
      compiled program. The results are those of the unpadded call up to
      round-off, but the S = P' + N cache slots then include the padding
      (key_valid False there; read slots through key_pos/key_valid).

  Returns:
    A `Generation`. A row whose logits become non-finite stops there (its
    remaining tokens are -1).

  Raises:
    TypeError: non-integer prompt ids (float ids are never truncated).
    ValueError: bad shapes or options, a NaN, infinite or negative temperature;
      eagerly, prompt ids outside [0, vocab_size) or a prompt_mask whose last
      column is not all True.

  Under jit (prompt or mask traced): a row with an out-of-range id or a False
  last mask entry, or every row for a traced temperature that is NaN or
  negative, generates nothing: tokens -1, num_steps 0.
  """
  if not isinstance(config, LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", min_value=1)
  validate_params(params, config)
  prompt = V.check_array(prompt_ids, "prompt_ids", dtype="int", ndim=(1, 2))
  if prompt.ndim == 1:
    prompt = prompt[None]
  if prompt.shape[1] == 0 or prompt.shape[0] == 0:
    raise ValueError(
      f"prompt_ids must be int [B, P] with B, P >= 1, got shape {prompt.shape}"
    )
  mask = (
    jnp.ones(prompt.shape, bool)
    if prompt_mask is None
    else V.check_array(prompt_mask, "prompt_mask", dtype="intbool").astype(bool)
  )
  if mask.ndim == 1:
    mask = mask[None]
  if mask.shape != prompt.shape:
    raise ValueError(
      f"prompt_mask must have shape {prompt.shape}, got {mask.shape}"
    )
  prompt, ids_ok = _check_tokens(prompt, config, mask, name="prompt_ids")
  # host-side checks for concrete prompts
  xp = np if V.is_concrete(prompt, mask) else jnp
  p, m = xp.asarray(prompt), xp.asarray(mask)
  row_ok = xp.all((p >= 0) & (p < config.vocab_size) | ~m, axis=1)
  last_ok = V.check_values(
    m[:, -1],
    "prompt_mask[:, -1] must be True for every row: left-pad the prompts",
  )
  row_ok = row_ok & m[:, -1]
  del ids_ok, last_ok  # checked eagerly above; under jit row_ok carries them
  if V.is_concrete(temperature):
    t = temperature
    if isinstance(t, (jax.Array, np.ndarray)):
      if np.ndim(t) != 0:
        raise ValueError(
          f"temperature must be a scalar, got shape {np.shape(t)}"
        )
      t = float(t)
    temperature = V.check_float(t, "temperature", min_value=0.0)
    if temperature > 0 and key is None:
      raise ValueError("temperature > 0 needs a PRNG key")
  else:
    if key is None:
      raise ValueError("a traced temperature needs a PRNG key")
    temperature = jnp.asarray(temperature, jnp.float32)
    if temperature.ndim != 0:
      raise ValueError(
        f"temperature must be a scalar, got shape {temperature.shape}"
      )
    row_ok = row_ok & jnp.isfinite(temperature) & (temperature >= 0)
  _check_ablation(ablation, config, prompt.shape[0])
  resolve_impl(attention, prompt.shape[1], False)
  if block_size is not None:
    block_size = V.check_int(block_size, "block_size", min_value=1)
  pad = pad_target(pad_to, prompt.shape[1]) - prompt.shape[1]
  if pad:
    prompt = _left_pad_columns(prompt, pad, 0)
    mask = _left_pad_columns(mask, pad, False)
  stops = jnp.asarray(list(stop_ids) or [-2], jnp.int32)
  if key is None:
    key = jax.random.key(0)
  return _generate_jit(
    params,
    prompt.astype(jnp.int32),
    mask,
    stops,
    jnp.float32(temperature),
    key,
    ablation,
    row_ok,
    config=config,
    max_new_tokens=max_new_tokens,
    capture_attn=capture_attn,
    capture_values=capture_values,
    attention=attention,
    block_size=block_size,
  )


def greedy_generate(
  params: Params,
  prompt_ids: ArrayLike,
  *,
  config: LMConfig,
  max_new_tokens: int,
  **kwargs: Any,
) -> Generation:
  """`generate` with temperature 0.

  Args:
    params: model parameters.
    prompt_ids: int [B, P] left-padded prompts or [P].
    config: the model's LMConfig.
    max_new_tokens: N, static.
    **kwargs: the other keyword arguments of `generate` (not `temperature`).

  Returns:
    A `Generation` (see `generate`).
  """
  return generate(
    params,
    prompt_ids,
    config=config,
    max_new_tokens=max_new_tokens,
    temperature=0.0,
    **kwargs,
  )


@functools.partial(jax.jit, static_argnames=("config",))
def _query_sums(params, tokens, mask, *, config):
  _, _, cap = _forward(
    params,
    tokens,
    config=config,
    mask=mask,
    capture=Capture(queries=True),
    logits_mode=("none"),
  )
  q = cap["queries"]  # [B, L, T, H, dh]
  w = mask.astype(jnp.float32)[:, None, :, None, None]
  return jnp.sum(q * w, axis=(0, 2)), jnp.sum(mask)


def mean_queries(
  params: Params,
  prompts: Sequence[Sequence[int]],
  *,
  config: LMConfig,
  batch_size: int = 8,
  pad_id: int = 0,
) -> jax.Array:
  """Per-(layer, head) mean query vector over every real token of `prompts`.

  The queries are the q-projection outputs before QK-norm and RoPE, the site
  replaced by 'mean_q' ablation.

  Args:
    params: model parameters.
    prompts: a list of token lists (calibration prompts).
    config: the model's LMConfig.
    batch_size: prompts per forward pass.
    pad_id: id used for padding.

  Returns:
    f32 [L, H, dh].
  """
  from jaxpapers.lm._model import left_pad

  if not isinstance(config, LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  batch_size = V.check_int(batch_size, "batch_size", min_value=1)
  validate_params(params, config)
  prompts = [list(p) for p in prompts]
  if not prompts:
    raise ValueError("prompts must be a non-empty list of token lists")
  left_pad(prompts, pad_id=pad_id)  # type checks of every id
  bad = [t for p in prompts for t in p if not 0 <= int(t) < config.vocab_size]
  if bad or not 0 <= pad_id < config.vocab_size:
    raise ValueError(
      f"prompts and pad_id must be token ids in [0, vocab_size="
      f"{config.vocab_size}), got {(bad or [pad_id])[:5]}"
    )
  total = jnp.zeros(
    (config.n_layers, config.n_heads, config.head_dim), jnp.float32
  )
  count = 0
  length = max(len(p) for p in prompts)
  for i in range(0, len(prompts), batch_size):
    chunk = prompts[i : i + batch_size]
    # static batch shape
    chunk = chunk + [chunk[-1]] * (batch_size - len(chunk))
    ids, m = left_pad(chunk, pad_id=pad_id, length=length)
    n_real = min(batch_size, len(prompts) - i)
    m = m.at[n_real:].set(False)
    s, c = _query_sums(params, ids, m, config=config)
    total = total + s
    count += int(c)
  return total / count
