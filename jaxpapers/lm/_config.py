"""Architecture description shared by every decoder in `jaxpapers.lm`."""

from __future__ import annotations

import dataclasses
import math

_ARCHS = ("llama", "qwen3", "gemma3")
_ACTS = ("silu", "gelu_tanh")
_ROPE_LAYOUTS = ("interleaved", "neox")


@dataclasses.dataclass(frozen=True)
class LMConfig:
  """Static architecture of a decoder-only transformer.

  One forward pass (`jaxpapers.lm.forward`) serves every model described here:
  Llama-style models (SmolLM2; GQA, RMSNorm, SwiGLU, RoPE, tied embeddings) and
  the Gemma-3 additions (per-head q/k RMSNorm, post-attention/post-FFN norms,
  embedding scale, local/global layers with a sliding window).

  Attributes:
    arch: 'llama', 'qwen3' or 'gemma3' (informational; behaviour comes from the
      fields).
    vocab_size: V.
    d_model: residual width d.
    n_layers: L.
    n_heads: query heads H.
    n_kv_heads: key/value heads KV; H must be a multiple of KV (GQA; query head
      h reads KV head h // (H // KV)).
    head_dim: dh.
    ffn_dim: hidden width F of the gated MLP.
    act: 'silu' (SwiGLU) or 'gelu_tanh' (GeGLU).
    norm_eps: RMSNorm epsilon.
    rope_base: RoPE base of global layers.
    rope_base_local: RoPE base of local (sliding-window) layers, or None.
    rope_scale: linear RoPE scaling factor of global layers (positions are
      divided by it; llama.cpp's `rope.scaling.type = linear`); 1 means none.
    rope_layout: 'interleaved' rotates pairs (0,1), (2,3), ... (the layout of
      llama.cpp's permuted Q/K rows); 'neox' rotates (i, i + dh/2)
      ("rotate-half", the Hugging Face layout).
    sliding_window: window W of local layers (keys with q_pos - k_pos < W), or
      None.
    layer_is_global: per-layer flags; empty means every layer is global.
    qk_norm: per-head RMSNorm of q and k (after the projection, before RoPE).
    post_norms: RMSNorm on the attention and MLP outputs before the residual
      add.
    embed_scale: multiply token embeddings by this (Gemma: sqrt(d)), or None.
    query_scale: attention logit scale; None means 1/sqrt(head_dim).
    tie_embeddings: the unembedding is the embedding matrix.
    final_logit_softcap: c in logits := c · tanh(logits / c), or None (off).
    bos_id: beginning-of-sequence id, if the model uses one.
    eos_ids: ids that end generation.
  """

  vocab_size: int
  d_model: int
  n_layers: int
  n_heads: int
  n_kv_heads: int
  head_dim: int
  ffn_dim: int
  arch: str = "llama"
  act: str = "silu"
  norm_eps: float = 1e-5
  rope_base: float = 10000.0
  rope_base_local: float | None = None
  rope_scale: float = 1.0
  rope_layout: str = "neox"
  sliding_window: int | None = None
  layer_is_global: tuple[bool, ...] = ()
  qk_norm: bool = False
  post_norms: bool = False
  embed_scale: float | None = None
  query_scale: float | None = None
  tie_embeddings: bool = True
  final_logit_softcap: float | None = None
  bos_id: int | None = None
  eos_ids: tuple[int, ...] = ()

  def __post_init__(self):
    for name in (
      "vocab_size",
      "d_model",
      "n_layers",
      "n_heads",
      "n_kv_heads",
      "head_dim",
      "ffn_dim",
    ):
      v = getattr(self, name)
      if not isinstance(v, int) or v <= 0:
        raise ValueError(f"LMConfig.{name} must be a positive int, got {v!r}")
    if self.n_heads % self.n_kv_heads:
      raise ValueError(
        f"LMConfig.n_heads ({self.n_heads}) must be a multiple of n_kv_heads "
        f"({self.n_kv_heads})"
      )
    if self.head_dim % 2:
      raise ValueError(
        f"LMConfig.head_dim must be even for RoPE, got {self.head_dim}"
      )
    if self.arch not in _ARCHS:
      raise ValueError(
        f"LMConfig.arch must be one of {_ARCHS}, got {self.arch!r}"
      )
    if self.act not in _ACTS:
      raise ValueError(f"LMConfig.act must be one of {_ACTS}, got {self.act!r}")
    if self.rope_layout not in _ROPE_LAYOUTS:
      raise ValueError(
        f"LMConfig.rope_layout must be one of {_ROPE_LAYOUTS}, "
        f"got {self.rope_layout!r}"
      )
    if self.layer_is_global and len(self.layer_is_global) != self.n_layers:
      raise ValueError(
        f"LMConfig.layer_is_global must have n_layers={self.n_layers} entries, "
        f"got {len(self.layer_is_global)}"
      )
    if not (isinstance(self.rope_scale, (int, float)) and self.rope_scale > 0):
      raise ValueError(
        "LMConfig.rope_scale must be a positive number, "
        f"got {self.rope_scale!r}"
      )
    if self.final_logit_softcap is not None and not (
      isinstance(self.final_logit_softcap, (int, float))
      and self.final_logit_softcap > 0
    ):
      raise ValueError(
        f"LMConfig.final_logit_softcap must be None or a positive number, "
        f"got {self.final_logit_softcap!r}"
      )
    if self.sliding_window is not None and not (
      isinstance(self.sliding_window, int) and self.sliding_window >= 1
    ):
      raise ValueError(
        "LMConfig.sliding_window must be None or an int >= 1, "
        f"got {self.sliding_window!r}"
      )
    object.__setattr__(
      self, "layer_is_global", tuple(bool(b) for b in self.layer_is_global)
    )
    object.__setattr__(self, "eos_ids", tuple(int(i) for i in self.eos_ids))

  @property
  def group_size(self) -> int:
    """Query heads per KV head, G = H // KV."""
    return self.n_heads // self.n_kv_heads

  @property
  def scale(self) -> float:
    return (
      self.query_scale
      if self.query_scale is not None
      else 1.0 / math.sqrt(self.head_dim)
    )

  def kv_head(self, h: int) -> int:
    """The KV head read by query head `h` (GQA): h // (H // KV).

    Args:
      h: a query head index in [0, H).

    Returns:
      The key/value head index in [0, KV).
    """
    return h // self.group_size

  def global_flags(self) -> tuple[bool, ...]:
    """Whether each layer attends globally (True) or through the sliding window.

    Returns:
      L booleans: `layer_is_global`, or all True when it is empty.
    """
    return self.layer_is_global or (True,) * self.n_layers

  def num_params(self) -> int:
    """The number of parameters of a model with this architecture.

    Returns:
      The count of every weight :func:`jaxpapers.lm.param_shapes` lists
      (embedding, the unembedding unless tied, L layers and the final norm).
    """
    d, f, v, L = self.d_model, self.ffn_dim, self.vocab_size, self.n_layers
    qkvo = d * self.head_dim * (2 * self.n_heads + 2 * self.n_kv_heads)
    per_layer = qkvo + 3 * d * f + 2 * d
    if self.qk_norm:
      per_layer += 2 * self.head_dim
    if self.post_norms:
      per_layer += 2 * d
    return L * per_layer + v * d * (1 if self.tie_embeddings else 2) + d


def small_config(
  vocab_size: int, *, d_model: int, n_layers: int, n_heads: int = 2
) -> LMConfig:
  """A small Llama-style architecture for a randomly initialised stand-in LM.

  The shape that experiments use when no real checkpoint is wanted (a random
  teacher, a random reader): multi-head attention without grouping (KV = H),
  head width d / H, a gated MLP of width 2d, RoPE base 10,000, tied embeddings.
  Pair it with :func:`jaxpapers.lm.init_params`.

  Args:
    vocab_size: V, the tokenizer's vocabulary size (a positive int).
    d_model: residual width d (a positive int; d / n_heads must be an even int
      for RoPE).
    n_layers: L, the number of decoder layers (a positive int).
    n_heads: H, the query heads, also the key/value heads (a positive int).

  Returns:
    An :class:`LMConfig` with ``n_kv_heads = n_heads``, ``head_dim = d_model //
    n_heads``, ``ffn_dim = 2 * d_model`` and ``rope_base = 10000.0`` (the other
    fields at their defaults).

  Example:
    >>> import jax
    >>> from jaxpapers import lm
    >>> cfg = lm.small_config(320, d_model=32, n_layers=1)
    >>> (cfg.n_heads, cfg.head_dim, cfg.ffn_dim)
    (2, 16, 64)
    >>> params = lm.init_params(jax.random.key(0), cfg, std=0.5)
  """
  for name, v in (
    ("vocab_size", vocab_size),
    ("d_model", d_model),
    ("n_layers", n_layers),
    ("n_heads", n_heads),
  ):
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
      raise ValueError(
        f"small_config: {name} must be a positive int, got {v!r}"
      )
  if d_model % (2 * n_heads):
    raise ValueError(
      "small_config: d_model must be a multiple of 2 * n_heads = "
      f"{2 * n_heads} (an even head width for RoPE), got d_model={d_model}"
    )
  return LMConfig(
    vocab_size=vocab_size,
    d_model=d_model,
    n_layers=n_layers,
    n_heads=n_heads,
    n_kv_heads=n_heads,
    head_dim=d_model // n_heads,
    ffn_dim=2 * d_model,
    rope_base=10000.0,
  )
