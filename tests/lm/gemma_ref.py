"""Float64 NumPy reference for Gemma-3 GGUF files, independent of
`jaxpapers.lm`.

Reads the file with `gguf.GGUFReader`, dequantises with `gguf.quants.dequantize`
and takes the hyperparameters from the metadata, plus llama.cpp's fixed
Gemma-3 choices (every 6th layer global, local RoPE base 10,000, query scale
1/sqrt(key_length), embedding scale sqrt(d), stored norm gains used as they
are). Weights stay [out, in] as in the file; heads are sliced explicitly; RoPE
is the rotate-half form; the tokenizer is llama.cpp's SentencePiece merge loop.
"""

import gguf
import numpy as np


def _field(reader, key, default=None):
  f = reader.fields.get(key)
  return default if f is None else f.contents()


class GemmaRef:
  """Hyperparameters, dequantised weights and a float64 forward of one Gemma-3
  GGUF file."""

  def __init__(self, path):
    r = gguf.GGUFReader(str(path))
    self.reader = r
    a = "gemma3."
    self.d = int(_field(r, a + "embedding_length"))
    self.L = int(_field(r, a + "block_count"))
    self.H = int(_field(r, a + "attention.head_count"))
    self.KV = int(_field(r, a + "attention.head_count_kv"))
    self.dh = int(_field(r, a + "attention.key_length"))
    self.eps = float(_field(r, a + "attention.layer_norm_rms_epsilon"))
    self.window = int(_field(r, a + "attention.sliding_window"))
    self.base_global = float(_field(r, a + "rope.freq_base"))
    self.base_local = 10000.0
    self.is_global = [(l + 1) % 6 == 0 for l in range(self.L)]
    self.softcap = _field(r, a + "final_logit_softcapping")
    self.types = {t.name: t.tensor_type for t in r.tensors}
    self.w = {}
    for t in r.tensors:
      a32 = gguf.quants.dequantize(t.data, t.tensor_type)
      self.w[t.name] = np.asarray(a32, np.float32).reshape(
        tuple(int(s) for s in t.shape[::-1])
      )

  def _t(self, name):
    return self.w[name].astype(np.float64)

  def _rms(self, x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * g

  @staticmethod
  def _rope(x, pos, base):
    dh = x.shape[-1]
    inv = base ** (-np.arange(0, dh, 2, dtype=np.float64) / dh)
    ang = pos[:, None] * inv[None]
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[:, : dh // 2], x[:, dh // 2 :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

  def forward(self, tokens, window=None):
    """(logits [T, V], head outputs z [L, T, H, dh], residual entering each
    layer [L, T, d])."""
    window = self.window if window is None else window
    tokens = np.asarray(tokens)
    T, dh = len(tokens), self.dh
    pos = np.arange(T, dtype=np.float64)
    emb = self.w["token_embd.weight"]
    x = emb[tokens].astype(np.float64) * np.sqrt(self.d)
    zs, res = [], []
    for l in range(self.L):
      p = lambda n: self._t(f"blk.{l}.{n}.weight")
      res.append(x.copy())
      base = self.base_global if self.is_global[l] else self.base_local
      h = self._rms(x, p("attn_norm"))
      q, k, v = h @ p("attn_q").T, h @ p("attn_k").T, h @ p("attn_v").T
      z = np.zeros((T, self.H, dh))
      allowed = np.tril(np.ones((T, T), bool))
      if not self.is_global[l]:
        allowed &= (pos[:, None] - pos[None, :]) < window
      for hh in range(self.H):
        g = hh * self.KV // self.H
        qh = self._rms(q[:, hh * dh : (hh + 1) * dh], p("attn_q_norm"))
        kh = self._rms(k[:, g * dh : (g + 1) * dh], p("attn_k_norm"))
        qh, kh = self._rope(qh, pos, base), self._rope(kh, pos, base)
        s = np.where(allowed, qh @ kh.T / np.sqrt(dh), -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        z[:, hh] = (e / e.sum(-1, keepdims=True)) @ v[:, g * dh : (g + 1) * dh]
      zs.append(z)
      x = x + self._rms(
        z.reshape(T, -1) @ p("attn_output").T, p("post_attention_norm")
      )
      h = self._rms(x, p("ffn_norm"))
      gt = h @ p("ffn_gate").T
      act = (
        0.5 * gt * (1 + np.tanh(np.sqrt(2 / np.pi) * (gt + 0.044715 * gt**3)))
      )
      x = x + self._rms(
        (act * (h @ p("ffn_up").T)) @ p("ffn_down").T, p("post_ffw_norm")
      )
    h = self._rms(x, self._t("output_norm.weight"))
    logits = np.concatenate(
      [
        h @ emb[i : i + 32768].astype(np.float64).T
        for i in range(0, emb.shape[0], 32768)
      ],
      axis=1,
    )
    if self.softcap:
      logits = self.softcap * np.tanh(logits / self.softcap)
    return logits, np.stack(zs), np.stack(res)


def greedy(ref: GemmaRef, tokens, steps: int) -> tuple[list[int], list[float]]:
  """Greedy continuation by repeated full forwards: (new tokens, top-1 minus
  top-2 logit)."""
  tokens, out, margins = list(tokens), [], []
  for _ in range(steps):
    last = ref.forward(tokens)[0][-1]
    top2 = np.argsort(last)[-2:]
    out.append(int(top2[1]))
    margins.append(float(last[top2[1]] - last[top2[0]]))
    tokens.append(out[-1])
  return out, margins


def spm_encode(text, tokens, scores, types, *, bos_id=None):
  """llama.cpp's SentencePiece tokenization (control/user-defined pieces cut out
  first).

  Pieces of type 3 (control) and 4 (user-defined) are matched leftmost-longest
  in the raw text; in every other fragment spaces become '▁', and, from single
  characters, the adjacent pair whose concatenation is a vocabulary piece with
  the highest score (leftmost on ties) is merged until none is left; a character
  outside the vocabulary becomes its UTF-8 byte pieces <0xXX>.
  """
  vocab = {}
  for i, t in enumerate(tokens):
    vocab.setdefault(t, i)
  specials = sorted(
    {t for t, ty in zip(tokens, types) if ty in (3, 4)}, key=len, reverse=True
  )
  out = [] if bos_id is None else [bos_id]
  frag, i = "", 0
  while i < len(text):
    hit = next((s for s in specials if text.startswith(s, i)), None)
    if hit is None:
      frag += text[i]
      i += 1
      continue
    out += _spm_fragment(frag, vocab, scores)
    out.append(vocab[hit])
    frag, i = "", i + len(hit)
  return out + _spm_fragment(frag, vocab, scores)


def _spm_fragment(text, vocab, scores):
  if not text:
    return []
  sym = list(text.replace(" ", "\u2581"))
  while True:
    best = None
    for j in range(len(sym) - 1):
      m = sym[j] + sym[j + 1]
      if m in vocab and (best is None or scores[vocab[m]] > best[0]):
        best = (scores[vocab[m]], j)
    if best is None:
      break
    j = best[1]
    sym[j : j + 2] = [sym[j] + sym[j + 1]]
  ids = []
  for s in sym:
    if s in vocab:
      ids.append(vocab[s])
    else:
      ids += [vocab[f"<0x{b:02X}>"] for b in s.encode("utf-8")]
  return ids
