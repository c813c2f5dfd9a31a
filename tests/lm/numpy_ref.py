"""Float64 NumPy reference decoder in the Hugging Face layout (rotate-half
RoPE).

Written independently of `jaxpapers.lm._model`: weights are per-layer [out, in]
matrices as in PyTorch checkpoints, heads are sliced out explicitly and GQA is
done by indexing the KV head of each query head.
"""

import numpy as np


def hf_weights_from_params(params, config, *, unpermute=False):
  """Per-layer [out, in] float64 matrices from stacked `jaxpapers.lm` params.

  With `unpermute=True` the Q/K rows are converted from llama.cpp's interleaved
  order to the rotate-half order (used to check the interleaved RoPE path).
  """
  from jaxpapers.lm import unpermute_qk

  p = {k: np.asarray(v, np.float64) for k, v in params.items()}
  L, d = config.n_layers, config.d_model
  layers = []
  for l in range(L):
    wq = p["wq"][l].reshape(d, -1).T
    wk = p["wk"][l].reshape(d, -1).T
    if unpermute:
      wq = unpermute_qk(wq, config.n_heads)
      wk = unpermute_qk(wk, config.n_kv_heads)
    lay = dict(
      q=wq,
      k=wk,
      v=p["wv"][l].reshape(d, -1).T,
      o=p["wo"][l].reshape(-1, d).T,
      gate=p["w_gate"][l].T,
      up=p["w_up"][l].T,
      down=p["w_down"][l].T,
      attn_norm=p["attn_norm"][l],
      ffn_norm=p["ffn_norm"][l],
    )
    for k in ("q_norm", "k_norm", "post_attn_norm", "post_ffn_norm"):
      if k in p:
        lay[k] = p[k][l]
    layers.append(lay)
  unemb = p["embed"] if config.tie_embeddings else p["unembed"]
  return dict(
    embed=p["embed"], layers=layers, final_norm=p["final_norm"], unembed=unemb
  )


def _rms(x, g, eps):
  return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def _rope_half(x, pos, base):
  # x [T, dh]; pairs (i, i + dh/2)
  dh = x.shape[-1]
  inv = base ** (-np.arange(0, dh, 2, dtype=np.float64) / dh)
  ang = pos[:, None] * inv[None]
  c, s = np.cos(ang), np.sin(ang)
  x1, x2 = x[:, : dh // 2], x[:, dh // 2 :]
  return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def np_forward(w, config, tokens):
  """Logits [T, V] (float64) for one unpadded sequence, rotate-half RoPE."""
  cfg = config
  T = len(tokens)
  pos = np.arange(T, dtype=np.float64)
  x = w["embed"][np.asarray(tokens)].astype(np.float64)
  if cfg.embed_scale is not None:
    x = x * cfg.embed_scale
  dh, H, KV = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
  flags = cfg.global_flags()
  for l, lay in enumerate(w["layers"]):
    is_global_base = flags[l] or cfg.rope_base_local is None
    base = cfg.rope_base if is_global_base else cfg.rope_base_local
    # linear RoPE scaling
    rpos = pos / cfg.rope_scale if is_global_base else pos
    h = _rms(x, lay["attn_norm"], cfg.norm_eps)
    q, k, v = h @ lay["q"].T, h @ lay["k"].T, h @ lay["v"].T
    out = np.zeros((T, H * dh))
    for hh in range(H):
      g = hh // (H // KV)
      qh, kh, vh = (
        q[:, hh * dh : (hh + 1) * dh],
        k[:, g * dh : (g + 1) * dh],
        v[:, g * dh : (g + 1) * dh],
      )
      if cfg.qk_norm:
        qh, kh = (
          _rms(qh, lay["q_norm"], cfg.norm_eps),
          _rms(kh, lay["k_norm"], cfg.norm_eps),
        )
      qh, kh = _rope_half(qh, rpos, base), _rope_half(kh, rpos, base)
      s = qh @ kh.T * cfg.scale
      allowed = np.tril(np.ones((T, T), bool))
      if cfg.sliding_window is not None and not flags[l]:
        allowed &= (pos[:, None] - pos[None, :]) < cfg.sliding_window
      s = np.where(allowed, s, -np.inf)
      a = np.exp(s - s.max(-1, keepdims=True))
      a /= a.sum(-1, keepdims=True)
      out[:, hh * dh : (hh + 1) * dh] = a @ vh
    att = out @ lay["o"].T
    if cfg.post_norms:
      att = _rms(att, lay["post_attn_norm"], cfg.norm_eps)
    x = x + att
    h = _rms(x, lay["ffn_norm"], cfg.norm_eps)
    gt = h @ lay["gate"].T
    if cfg.act == "silu":
      act = gt / (1 + np.exp(-gt))
    else:
      act = (
        0.5 * gt * (1 + np.tanh(np.sqrt(2 / np.pi) * (gt + 0.044715 * gt**3)))
      )
    m = (act * (h @ lay["up"].T)) @ lay["down"].T
    if cfg.post_norms:
      m = _rms(m, lay["post_ffn_norm"], cfg.norm_eps)
    x = x + m
  return _rms(x, w["final_norm"], cfg.norm_eps) @ w["unembed"].T
