r"""Latent multi-hop retrieval with adaptive stopping, as one ``lax.scan`` (§3.3
of the spec).

At hop t = 1..T_max+1 the context is c_t = q ⊕ d_1 ⊕ … ⊕ d_{t−1} ⊕ [PRED] (⊕ the
answer, teacher-forced, when given). One forward gives

  z_t = h_θ(c_t)_{[PRED]},   e_q^{(t)} = normalise(P_q z_t),   s_t = σ(MLP_c(z_t)),

and, from the logits that follow [PRED], the answer statistics (mean answer
entropy H̄_t, the entropy of the first answer token, teacher-forced greedy exact
match). The hop stops when s_t > τ_stop; otherwise (and for t ≤ T_max)

  d_t = argmax_{d ∉ {d_1..d_{t−1}}} ⟨e_q^{(t)}, e_d⟩

is retrieved and its tokens are appended to the context buffer with
``dynamic_update_slice``. The number of retrieval calls is Σ_t active_t.
**Reconstruction**: the stop decision at hop t reads c_t (the evidence retrieved
so far), so "sufficient" means "answerable from c_t"; the last step T_max+1 only
reads (it gives the answer statistics after T_max retrievals).

The LM is an argument: ``lm_fn(lm_params, ids [B, L], mask [B, L], positions [B,
P]) -> (hidden [B, P, H], logits [B, P, V])``; `lm_hidden_fn` builds it for any
``jaxpapers.lm`` decoder (SmolLM2-135M in the experiment).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm
from jaxpapers.core import validation as V
from jaxpapers.lanr._data import pad_tokens
from jaxpapers.lanr._heads import control_logits, query_embedding
from jaxpapers.lanr._losses import answer_entropy

LMFn = Callable[
  [object, jax.Array, jax.Array, jax.Array], tuple[jax.Array, jax.Array]
]
_NEG = -1e30


def lm_hidden_fn(config: lm.LMConfig, *, layer: int = -1) -> LMFn:
  """An `LMFn` for a ``jaxpapers.lm`` decoder: hidden states and logits at
  chosen positions.

  The hidden state is the residual stream entering layer ``layer`` (``-1``: the
  last layer; ℓ* of the spec, a **reconstruction**); the logits are the model's
  next-token logits.

  Args:
    config: the decoder's `LMConfig`.
    layer: which layer's input residual stream to return (Python int in [-L,
      L)).

  Returns:
    ``fn(params, ids int [B, L], mask bool [B, L], positions int [B, P]) ->
    (hidden f32 [B, P, d], logits f32 [B, P, V])``. Positions count the real
    tokens (right padding keeps 0..len−1).
  """
  if not isinstance(config, lm.LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  layer = V.check_int(
    layer, "layer", min_value=-config.n_layers, max_value=config.n_layers - 1
  )

  def fn(params, ids, mask, positions):
    logits, _, cap = lm.forward(
      params,
      ids,
      config=config,
      mask=mask,
      capture=lm.Capture(residual=True),
      logits_at=positions,
    )
    res = cap["residual"][:, layer]  # [B, L, d]
    hidden = jnp.take_along_axis(
      res, positions[:, :, None].astype(jnp.int32), axis=1
    )
    assert logits is not None  # logits_at=positions always returns logits
    return hidden, logits

  return fn


def prefill_prefix(
  config: lm.LMConfig, params: lm.Params, prefix_ids: jax.Array
) -> dict[str, Any]:
  """The LM parameters with the KV cache of a fixed prompt prefix, for
  :func:`lm_prefix_fn`.

  Every context of the experiment starts with the same tokens (a chat template's
  system turn and worked examples); running them once and reading each context
  after their cache gives the same states as reading prefix ⊕ context, at the
  cost of the context alone.

  Args:
    config: the decoder's `LMConfig`.
    params: its parameters.
    prefix_ids: int [P] (P >= 1) the prefix tokens (with BOS where the model
      wants one).

  Returns:
    ``{'params': params, 'prefix': KVCache}`` (batch 1, P slots, all valid).
  """
  if not isinstance(config, lm.LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  ids = V.check_array(
    prefix_ids, "prefix_ids", ndim=1, dtype="int", nonempty=True
  )
  cache = lm.init_cache(config, 1, ids.shape[0])
  _, cache, _ = lm.forward(
    params, ids[None], config=config, cache=cache, logits_at=("none")
  )
  return {"params": params, "prefix": cache}


def lm_prefix_fn(config: lm.LMConfig, *, layer: int = -1) -> LMFn:
  """An `LMFn` that reads every context after a cached prefix (see
  :func:`prefill_prefix`).

  Its ``lm_params`` is the dict of :func:`prefill_prefix`. For ``ids`` [B, L]
  (right-padded, ``mask``) it tiles the prefix cache over the batch, adds L
  empty slots and runs the decoder on ``ids`` alone: hidden states and logits
  equal those of ``lm_hidden_fn`` on prefix ⊕ ids at the shifted positions
  (float round-off aside). ``positions`` index ``ids`` (the context without the
  prefix), as for ``lm_hidden_fn``.

  Args:
    config: the decoder's `LMConfig`.
    layer: which layer's input residual stream to return (Python int in [-L,
      L)).

  Returns:
    ``fn(lm_params, ids int [B, L], mask bool [B, L], positions int [B, P]) ->
    (hidden f32 [B, P, d], logits f32 [B, P, V])``.
  """
  if not isinstance(config, lm.LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  layer = V.check_int(
    layer, "layer", min_value=-config.n_layers, max_value=config.n_layers - 1
  )

  def fn(lm_params, ids, mask, positions):
    if not isinstance(lm_params, dict) or set(lm_params) != {
      "params",
      "prefix",
    }:
      raise TypeError(
        "lm_params must be the dict of prefill_prefix ({'params', 'prefix'})"
      )
    pc = lm_params["prefix"]
    B, L = ids.shape

    def grow(a, fill):  # [1, S, ...] -> [B, S + L, ...] along the slot axis
      extra = jnp.full(a.shape[:1] + (L,) + a.shape[2:], fill, a.dtype)
      return jnp.broadcast_to(
        jnp.concatenate([a, extra], axis=1), (B, a.shape[1] + L) + a.shape[2:]
      )

    def grow_kv(a):  # [layers, 1, S, KV, dh] -> [layers, B, S + L, KV, dh]
      return jax.vmap(lambda x: grow(x, 0.0))(a)

    cache = lm.KVCache(
      k=grow_kv(pc.k),
      v=grow_kv(pc.v),
      pos=grow(pc.pos, 0),
      valid=grow(pc.valid, False),
      index=pc.index,
      next_pos=jnp.broadcast_to(pc.next_pos, (B,)),
    )
    logits, _, cap = lm.forward(
      lm_params["params"],
      ids,
      config=config,
      mask=mask,
      cache=cache,
      capture=lm.Capture(residual=True),
      logits_at=positions,
    )
    res = cap["residual"][:, layer]  # [B, L, d]
    hidden = jnp.take_along_axis(
      res, positions[:, :, None].astype(jnp.int32), axis=1
    )
    assert logits is not None  # logits_at=positions always returns logits
    return hidden, logits

  return fn


def append_tokens(
  buf: jax.Array, length: jax.Array, tokens: jax.Array, n: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """Write row b's ``tokens[b, :n[b]]`` at ``buf[b, length[b]:]``; returns (buf,
  length + n).

  Entries of ``tokens`` past ``n[b]`` are written too (as scratch) but lie
  beyond the new length, so the next append overwrites them. The caller keeps
  ``length + T_tok <= L``.

  Args:
    buf: int [B, L] token buffers.
    length: int [B] tokens already in each row.
    tokens: int [B, T_tok] tokens to append (T_tok <= L).
    n: int [B] how many of each row's tokens count.

  Returns:
    ``(buf int [B, L], length + n int [B])``.
  """
  buf = V.check_array(buf, "buf", ndim=2, dtype="int")
  B = buf.shape[0]
  length = V.check_array(length, "length", shape=(B,), dtype="int")
  tokens = V.check_array(tokens, "tokens", ndim=2, dtype="int")
  if tokens.shape[0] != B or tokens.shape[1] > buf.shape[1]:
    raise ValueError(
      f"tokens must have shape [B={B}, T_tok <= L={buf.shape[1]}], "
      f"got {tokens.shape}"
    )
  n = V.check_array(n, "n", shape=(B,), dtype="int")
  upd = jax.vmap(lambda b, t, i: jax.lax.dynamic_update_slice(b, t, (i,)))
  return upd(buf, tokens.astype(buf.dtype), length), length + n


def read_context(
  lm_fn: LMFn,
  lm_params: Any,
  ids: jax.Array,
  length: jax.Array,
  pred_ids: jax.Array,
  answer_ids: jax.Array,
  answer_len: jax.Array,
) -> dict[str, jax.Array]:
  """One forward over c ⊕ [PRED] ⊕ answer: the [PRED] state and the answer
  statistics.

  Args:
    lm_fn: see the module docstring.
    lm_params: the LM's parameters (passed to ``lm_fn``).
    ids: int [B, L], contexts right-padded. L must hold every row's length +
      len(pred_ids) + answer_len tokens (checked: a ValueError when concrete;
      under jit the outputs are NaN and ``correct`` False).
    length: int [B] real tokens of each context.
    pred_ids: int [P], the [PRED] token(s); z is read at the last one.
    answer_ids: int [B, A], the answer tokens (teacher forcing).
    answer_len: int [B] real answer tokens per row.

  Returns:
    dict of z f32 [B, H]; h_answer [B] (mean entropy over the answer tokens,
    H̄); h_pred [B] (entropy of the next-token prediction at [PRED]); correct
    bool [B] (every answer token is the argmax given the gold prefix, i.e.
    greedy decoding reproduces it; False when answer_len = 0); logp [B] (log p
    of the answer).
  """
  ids = V.check_array(ids, "ids", ndim=2, dtype="int")
  B, L = ids.shape
  length = V.check_array(length, "length", shape=(B,), dtype="int")
  pred_ids = V.check_array(
    pred_ids, "pred_ids", ndim=1, dtype="int", nonempty=True
  )
  answer_ids = V.check_array(answer_ids, "answer_ids", ndim=2, dtype="int")
  if answer_ids.shape[0] != B or answer_ids.shape[1] < 1:
    raise ValueError(
      f"answer_ids must have shape [B={B}, A>=1], got {answer_ids.shape}"
    )
  answer_len = V.check_array(answer_len, "answer_len", shape=(B,), dtype="int")
  P, A = pred_ids.shape[0], answer_ids.shape[1]
  if P + A > L:
    raise ValueError(
      f"ids width L={L} cannot hold [PRED] ({P}) and the answer ({A})"
    )
  # Each row's [PRED] and answer are written after its context: they must fit in
  # the buffer, or the write would be clamped over the context's end (a silently
  # wrong read).
  ok = V.check_values(
    length + P + answer_len <= L,
    (
      f"ids width L={L} must hold every row's length + [PRED] ({P}) + its "
      "answer_len"
    ),
  )
  suffix = jnp.concatenate(
    [jnp.broadcast_to(pred_ids, (B, P)), answer_ids], axis=1
  )
  seq, end = append_tokens(ids, length, suffix, P + answer_len)
  mask = jnp.arange(L)[None, :] < end[:, None]
  pred_pos = length + P - 1
  pos = jnp.minimum(pred_pos[:, None] + jnp.arange(A)[None, :], L - 1)  # [B, A]
  hidden, logits = lm_fn(lm_params, seq, mask, pos)
  amask = jnp.arange(A)[None, :] < answer_len[:, None]
  lp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
  tok_lp = jnp.take_along_axis(lp, answer_ids[..., None].astype(jnp.int32), -1)[
    ..., 0
  ]
  hit = (jnp.argmax(logits, -1) == answer_ids) | ~amask
  out = {
    "z": hidden[:, 0].astype(jnp.float32),
    "h_answer": answer_entropy(logits, amask),
    "h_pred": answer_entropy(logits[:, :1], jnp.ones((B, 1), bool)),
    "correct": hit.all(-1) & (answer_len > 0) & jnp.asarray(ok),
    "logp": jnp.where(amask, tok_lp, 0.0).sum(-1),
  }
  return V.poison(out, ok)


class RetrievalTrace(NamedTuple):
  """What `multihop_retrieve` returns (T = t_max).

  Attributes:
    doc_ids: int32 [B, T], the document retrieved at each hop, −1 where no call
      was made.
    active: bool [B, T], whether hop t made a retrieval call.
    n_calls: int32 [B], Σ_t active_t.
    stop_probs: f32 [B, T+1], s_t at every step (0 without a control head).
    z: f32 [B, T+1, H], the [PRED] hidden states.
    h_answer, h_pred: f32 [B, T+1], answer statistics per step (see
      `read_context`).
    correct: bool [B, T+1], teacher-forced greedy exact match per step.
    logp: f32 [B, T+1].
  After the stop the context no longer changes, so step n_calls holds the answer
  statistics of the final context (`at_hop`).
  """

  doc_ids: jax.Array
  active: jax.Array
  n_calls: jax.Array
  stop_probs: jax.Array
  z: jax.Array
  h_answer: jax.Array
  h_pred: jax.Array
  correct: jax.Array
  logp: jax.Array


# one compilation per LM and buffer width
_read_jit = jax.jit(read_context, static_argnums=0)


def read_contexts(
  lm_fn: LMFn,
  lm_params: Any,
  contexts: Sequence[Sequence[int]],
  answers: Sequence[Sequence[int]],
  pred_ids: Any,
  *,
  width: int,
  batch_size: int,
) -> dict[str, np.ndarray]:
  """:func:`read_context` over ragged contexts, in fixed-shape batches (host
  loop).

  Every batch is padded to ``[batch_size, width]`` (the last one with empty
  rows), so one compiled program serves every batch of a width.

  Args:
    lm_fn: see the module docstring.
    lm_params: the LM's parameters (passed to ``lm_fn``).
    contexts: ``M`` token lists (the context c).
    answers: ``M`` token lists (the answer, teacher-forced).
    pred_ids: int ``[P]``, the [PRED] token(s).
    width: the buffer width; must hold every context, the [PRED] tokens and its
      answer.
    batch_size: rows per compiled call.

  Returns:
    ``{field: np.ndarray [M, ...]}`` with the fields of :func:`read_context`
    (``z [M, H]``, ``h_answer``, ``h_pred``, ``logp [M]``, ``correct`` bool
    ``[M]``).

  Raises:
    ValueError: if ``width`` cannot hold some context with ``[PRED]`` and its
      answer.
  """
  bs = V.check_int(batch_size, "batch_size", min_value=1)
  pred_ids = np.asarray(pred_ids, np.int32)
  need = max(
    len(s) + len(pred_ids) + len(a)
    for s, a in zip(contexts, answers, strict=True)
  )
  if need > width:
    raise ValueError(
      f"width={width} cannot hold a context with [PRED] and answer ({need} "
      "tokens)"
    )
  ids, n = pad_tokens(contexts, width=width)
  ai, al = pad_tokens(answers)
  out = []
  for i in range(0, len(ids), bs):
    pad = bs - len(ids[i : i + bs])
    pad2 = lambda x: np.pad(x[i : i + bs], [(0, pad)] + [(0, 0)] * (x.ndim - 1))
    r = _read_jit(
      lm_fn, lm_params, pad2(ids), pad2(n), pred_ids, pad2(ai), pad2(al)
    )
    out.append(jax.tree.map(lambda x: np.asarray(x)[: bs - pad], r))
  return {k: np.concatenate([o[k] for o in out]) for k in out[0]}


def greedy_retrieve(
  read: Callable[[list[list[int]]], dict[str, Any]],
  score_fn: Callable[[jax.Array], Any],
  num_questions: int,
  t_max: int,
  *,
  final: bool = True,
) -> dict[str, np.ndarray]:
  """The loop of :func:`multihop_retrieve` (no control head), hop by hop on the
  host.

  At hop ``t`` the context ``c_t`` (question ⊕ the documents retrieved so far)
  of every question is read by ``read``, and the document ``argmax_{d not
  retrieved} score_fn(z_t)[d]`` is appended (ties: the lower id). ``read`` may
  be any reader of contexts (e.g. a cache over :func:`read_contexts`), so
  contexts shared by several loops are read once.

  Args:
    read: ``retrieved -> {field: [Q, ...]}`` for the contexts of the ``Q``
      questions with the given documents (a list per question), with at least
      the field ``z [Q, H]``.
    score_fn: ``z [Q, H] -> scores [Q, N]``.
    num_questions: ``Q``.
    t_max: retrieval calls.
    final: also read the context after the last call (its answer statistics);
      False stops after the ``t_max`` retrievals (what support recall needs).

  Returns:
    ``doc_ids`` int64 ``[Q, t_max]`` and, for every field of ``read``, the
    stacked reads of the steps read (``t_max + 1``, or ``t_max`` without
    ``final``): ``[Q, S, ...]``.
  """
  Q = V.check_int(num_questions, "num_questions", min_value=1)
  t_max = V.check_int(t_max, "t_max", min_value=1)
  retrieved: list[list[int]] = [[] for _ in range(Q)]
  steps = []
  for t in range(t_max + 1 if final else t_max):
    r = read(retrieved)
    steps.append(r)
    if t < t_max:
      s = np.array(score_fn(jnp.asarray(r["z"])), np.float64)
      for qi in range(Q):
        s[qi, retrieved[qi]] = -np.inf
      for qi, d in enumerate(np.argmax(s, axis=1)):
        retrieved[qi].append(int(d))
  out = {"doc_ids": np.asarray(retrieved, np.int64).reshape(Q, t_max)}
  return out | {
    f: np.stack([np.asarray(st[f]) for st in steps], axis=1) for f in steps[0]
  }


def _check_int_arr(x, name, **kw):
  return V.check_array(x, name, dtype="int", **kw)


@functools.partial(
  jax.jit, static_argnames=("lm_fn", "t_max", "tau_stop", "max_len")
)
def _multihop(
  lm_params,
  heads,
  control,
  q_ids,
  q_len,
  doc_emb,
  doc_tokens,
  doc_len,
  pred_ids,
  answer_ids,
  answer_len,
  *,
  lm_fn,
  t_max,
  tau_stop,
  max_len,
):
  B, N = q_ids.shape[0], doc_emb.shape[0]
  buf = jnp.zeros((B, max_len), jnp.int32)
  buf, length = append_tokens(buf, jnp.zeros((B,), jnp.int32), q_ids, q_len)
  doc_emb = doc_emb.astype(jnp.float32)

  def hop(carry, t):
    buf, length, retrieved, active = carry
    r = read_context(
      lm_fn, lm_params, buf, length, pred_ids, answer_ids, answer_len
    )
    z = r["z"]
    if control is None:
      s = jnp.zeros((B,), jnp.float32)
    else:
      s = jax.nn.sigmoid(control_logits(control, z))
    act = active & (s <= tau_stop) & (t < t_max)
    e_q = query_embedding(heads, z)  # [B, D_r]
    scores = jnp.where(retrieved, _NEG, e_q @ doc_emb.T)  # [B, N]
    d = jnp.argmax(scores, axis=1).astype(jnp.int32)
    n = jnp.where(act, doc_len[d], 0)
    buf, length = append_tokens(buf, length, doc_tokens[d], n)
    retrieved = retrieved | (
      act[:, None] & (jnp.arange(N)[None, :] == d[:, None])
    )
    out = dict(r, s=s, d=jnp.where(act, d, -1), act=act)
    return (buf, length, retrieved, act), out

  init = (buf, length, jnp.zeros((B, N), bool), jnp.ones((B,), bool))
  _, o = jax.lax.scan(hop, init, jnp.arange(t_max + 1))
  o = jax.tree.map(lambda x: jnp.moveaxis(x, 0, 1), o)  # [B, T+1, ...]
  return RetrievalTrace(
    doc_ids=o["d"][:, :t_max],
    active=o["act"][:, :t_max],
    n_calls=o["act"][:, :t_max].sum(1).astype(jnp.int32),
    stop_probs=o["s"],
    z=o["z"],
    h_answer=o["h_answer"],
    h_pred=o["h_pred"],
    correct=o["correct"],
    logp=o["logp"],
  )


def multihop_retrieve(
  lm_fn: LMFn,
  lm_params: Any,
  heads: dict[str, jax.Array],
  control: dict[str, jax.Array] | None,
  q_ids: jax.Array,
  q_len: jax.Array,
  doc_emb: jax.Array,
  doc_tokens: jax.Array,
  doc_len: jax.Array,
  pred_ids: jax.Array,
  answer_ids: jax.Array,
  answer_len: jax.Array,
  *,
  t_max: int = 3,
  tau_stop: float = 0.5,
  max_len: int | None = None,
) -> RetrievalTrace:
  """LAnR inference: latent multi-hop retrieval with the control head (module
  docstring).

  Compiles once per (shapes, t_max, tau_stop, lm_fn); the number of hops
  actually used is data (an ``active`` mask), so it never recompiles on it.

  Args:
    lm_fn: a hashable `LMFn` (e.g. from `lm_hidden_fn`; keep one instance to
      reuse the cache).
    lm_params: its parameters.
    heads: {'p_q', 'p_d'} (only P_q is used here; the index is precomputed).
    control: the control MLP's params, or None (never stop early: fixed T_max
      hops).
    q_ids: int [B, Lq] questions, right-padded.
    q_len: int [B] question lengths.
    doc_emb: float [N, D_r] the index e_d (`doc_embedding` of
      `encode_documents`).
    doc_tokens: int [N, Ld] document tokens, right-padded.
    doc_len: int [N] document lengths.
    pred_ids: int [P] the [PRED] token(s).
    answer_ids: int [B, A] answers for the teacher-forced statistics (A >= 1).
    answer_len: int [B] answer lengths (0 to skip).
    t_max: T_max >= 1, the most retrieval calls.
    tau_stop: τ_stop in [0, 1].
    max_len: buffer length L (default Lq + T_max·Ld + P + A, which always fits).

  Returns:
    `RetrievalTrace`.

  Example:
    config, params, tok = lm.load_smollm2()
    enc = lambda s: tok.encode(s, add_bos=False)
    kb = make_kb(0)
    qas = make_questions(kb, kb.people[:8], n_per_hop=2, seed=0)
    lm_fn = lm_hidden_fn(config)
    heads = init_retrieval_heads(jax.random.key(0), config.d_model)
    control = init_control_head(jax.random.key(1), config.d_model)  # trained with lanr_loss
    doc_tokens, doc_len = pad_tokens([enc(" " + d) for d in kb.docs])
    doc_marker, pred_ids = jnp.asarray(enc("\\nKeywords:")), jnp.asarray(enc("\\nAnswer:"))
    doc_h = encode_documents(lm_fn, params, doc_tokens, doc_len, doc_marker)
    q_ids, q_len = pad_tokens([enc(f" {qa.question}\\nFacts:") for qa in qas])
    answer_ids, answer_len = pad_tokens([enc(qa.answer) for qa in qas])
    trace = multihop_retrieve(lm_fn, params, heads, control, q_ids, q_len,
                              doc_embedding(heads, doc_h), doc_tokens, doc_len,
                              pred_ids, answer_ids, answer_len)
    # trace.doc_ids [B, 3] (-1 after the stop), trace.n_calls [B]

  Under jit: ids are not checked against the vocabulary (an out-of-range id
  makes the LM's outputs NaN, see ``jaxpapers.lm.forward``);
  q_len/doc_len/answer_len are clipped to their arrays' widths by the checks
  below when concrete, and must be within them when traced.
  """
  t_max = V.check_int(t_max, "t_max", min_value=1)
  tau_stop = V.check_float(tau_stop, "tau_stop", min_value=0.0, max_value=1.0)
  q_ids = _check_int_arr(q_ids, "q_ids", ndim=2)
  B, Lq = q_ids.shape
  q_len = _check_int_arr(q_len, "q_len", shape=(B,))
  doc_emb = V.check_array(
    doc_emb, "doc_emb", ndim=2, dtype="float", nonempty=True
  )
  N = doc_emb.shape[0]
  doc_tokens = _check_int_arr(doc_tokens, "doc_tokens", ndim=2)
  if doc_tokens.shape[0] != N:
    raise ValueError(
      f"doc_tokens must have shape [N={N}, Ld], got {doc_tokens.shape}"
    )
  doc_len = _check_int_arr(doc_len, "doc_len", shape=(N,))
  pred_ids = _check_int_arr(pred_ids, "pred_ids", ndim=1, nonempty=True)
  answer_ids = _check_int_arr(answer_ids, "answer_ids", ndim=2)
  if answer_ids.shape[0] != B or answer_ids.shape[1] < 1:
    raise ValueError(
      f"answer_ids must have shape [B={B}, A>=1], got {answer_ids.shape}"
    )
  answer_len = _check_int_arr(answer_len, "answer_len", shape=(B,))
  if not isinstance(heads, dict) or "p_q" not in heads:
    raise TypeError("heads must be a dict with 'p_q' (init_retrieval_heads)")
  if heads["p_q"].shape[1] != doc_emb.shape[1]:
    raise ValueError(
      f"doc_emb must have D_r = {heads['p_q'].shape[1]} columns (P_q), "
      f"got {doc_emb.shape}"
    )
  if N < t_max:
    raise ValueError(
      f"the index must hold at least t_max={t_max} documents, got N={N}"
    )
  P, A, Ld = pred_ids.shape[0], answer_ids.shape[1], doc_tokens.shape[1]
  need = Lq + t_max * Ld + P + A
  if max_len is None:
    max_len = need
  max_len = V.check_int(max_len, "max_len", min_value=1)
  if max_len < need:
    raise ValueError(
      f"max_len must be >= Lq + t_max*Ld + P + A = {need}, got {max_len}"
    )
  ok = V.check_values(
    jnp.all((q_len >= 0) & (q_len <= Lq)), f"q_len must lie in [0, Lq={Lq}]"
  ) & V.check_values(
    jnp.all((doc_len >= 0) & (doc_len <= Ld)), f"doc_len must lie in [0, {Ld}]"
  )
  ok = ok & V.check_values(
    jnp.all((answer_len >= 0) & (answer_len <= A)),
    f"answer_len must lie in [0, {A}]",
  )
  trace = _multihop(
    lm_params,
    heads,
    control,
    q_ids,
    q_len,
    doc_emb,
    doc_tokens,
    doc_len,
    pred_ids,
    answer_ids,
    answer_len,
    lm_fn=lm_fn,
    t_max=t_max,
    tau_stop=tau_stop,
    max_len=max_len,
  )
  return V.poison(trace, ok)


def encode_documents(
  lm_fn: LMFn,
  lm_params: Any,
  doc_tokens: jax.Array,
  doc_len: jax.Array,
  doc_marker: jax.Array,
  *,
  batch_size: int = 64,
) -> jax.Array:
  """[DOC] hidden states h_d = h_θ(d ⊕ [DOC])_{last} of every document, in
  fixed-size batches.

  The index is then ``doc_embedding(heads, h)`` (cheap, so re-projecting after a
  head update needs no LM forward).

  Args:
    lm_fn: the LM's `LMFn` (see the module docstring).
    lm_params: its parameters.
    doc_tokens: int [N, Ld], right-padded.
    doc_len: int [N] document lengths (>= 1).
    doc_marker: int [M] the [DOC] token(s); h is read at the last one.
    batch_size: rows per forward (the last batch is padded, so one compilation
      serves all).

  Returns:
    f32 [N, H].
  """
  doc_tokens = _check_int_arr(doc_tokens, "doc_tokens", ndim=2, nonempty=True)
  N, Ld = doc_tokens.shape
  doc_len = _check_int_arr(doc_len, "doc_len", shape=(N,))
  doc_marker = _check_int_arr(doc_marker, "doc_marker", ndim=1, nonempty=True)
  bs = V.check_int(batch_size, "batch_size", min_value=1)
  V.check_values(
    jnp.all((doc_len >= 1) & (doc_len <= Ld)), f"doc_len must lie in [1, {Ld}]"
  )
  M = doc_marker.shape[0]
  fn = _encode_batch(lm_fn, Ld + M)
  out = []
  for i in range(0, N, bs):
    t, n = doc_tokens[i : i + bs], doc_len[i : i + bs]
    pad = bs - t.shape[0]
    t = jnp.pad(t, ((0, pad), (0, 0)))
    n = jnp.pad(n, (0, pad), constant_values=1)
    out.append(fn(lm_params, t, n, doc_marker)[: bs - pad])
  return jnp.concatenate(out, 0)


@functools.lru_cache(maxsize=16)
def _encode_batch(lm_fn, width):
  @jax.jit
  def f(lm_params, t, n, marker):
    B, M = t.shape[0], marker.shape[0]
    buf = jnp.zeros((B, width), jnp.int32)
    buf, _ = append_tokens(buf, jnp.zeros((B,), jnp.int32), t, n)
    buf, end = append_tokens(
      buf, n, jnp.broadcast_to(marker, (B, M)), jnp.full((B,), M)
    )
    mask = jnp.arange(width)[None, :] < end[:, None]
    h, _ = lm_fn(lm_params, buf, mask, (end - 1)[:, None])
    return h[:, 0].astype(jnp.float32)

  return f


def stop_hops(stop_probs: jax.Array, tau_stop: float) -> jax.Array:
  """Retrieval calls made by the stop rule: the first t with s_t > τ_stop (else
  T).

  Applying a control head after the fact to a trace run without one
  (``control=None``) gives the same calls as running with it, because the
  context only grows while active.

  Args:
    stop_probs: float [B, T+1] (the last step is never a call).
    tau_stop: τ_stop (static).

  Returns:
    int32 [B] in [0, T].
  """
  stop_probs = V.check_array(stop_probs, "stop_probs", ndim=2, dtype="float")
  tau_stop = V.check_float(tau_stop, "tau_stop", min_value=0.0, max_value=1.0)
  T = stop_probs.shape[1] - 1
  if T < 1:
    raise ValueError(
      f"stop_probs must have shape [B, T+1] with T >= 1, got {stop_probs.shape}"
    )
  go = jnp.cumprod((stop_probs[:, :T] <= tau_stop).astype(jnp.int32), axis=1)
  return go.sum(1).astype(jnp.int32)


def at_hop(x: jax.Array, hops: jax.Array) -> jax.Array:
  """x[b, hops[b]]: a per-step statistic read at each row's final step.

  Args:
    x: [B, T+1, ...] a per-step statistic (e.g. a `RetrievalTrace` field).
    hops: int [B] in [0, T+1), the step to read (e.g. ``n_calls`` or
      :func:`stop_hops`).

  Returns:
    [B, ...] the values at those steps.
  """
  x = jnp.asarray(x)
  hops = _check_int_arr(hops, "hops", shape=(x.shape[0],))
  ok = V.check_values(
    jnp.all((hops >= 0) & (hops < x.shape[1])),
    f"hops must lie in [0, {x.shape[1]})",
  )
  idx = hops.reshape((-1,) + (1,) * (x.ndim - 1)).astype(jnp.int32)
  return V.poison(jnp.take_along_axis(x, idx, axis=1)[:, 0], ok)
