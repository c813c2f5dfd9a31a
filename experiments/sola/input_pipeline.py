"""SOLA's input pipeline: offline text, the two tokenizations, the teacher cache
and the cost.

``prepare(config, workdir)`` splits the standard library's ``pydoc_data`` topics
by document into calibration / train / held-out windows, plus a code-transfer
set (standard-library source); trains the student's BPE tokenizer on the train
split; aligns every window with the teacher's own tokenization by MCC blocks;
caches the teacher's top-K_c predictions once (resumable,
``<workdir>/teacher_cache``); and estimates the correspondence cost on the
calibration split.
"""

from __future__ import annotations

import importlib
import inspect
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm
from jaxpapers import sola as S

# Methods whose student uses the teacher's own tokenizer (a student with the
# teacher's vocabulary).
SAME_TOK = ("same_tok_ce", "same_tok_kd")


def load_texts(c):
  """Document-level split of pydoc topics, and the code-transfer texts (stdlib
  source)."""
  import pydoc_data.topics

  docs = [
    v for _, v in sorted(pydoc_data.topics.topics.items()) if len(v) > 200
  ]
  code = [
    inspect.getsource(importlib.import_module(name)) for name in c.code_modules
  ]
  sizes = dict(train=c.n_train, calib=c.n_calib, eval=c.n_eval, code=c.n_code)
  return S.window_splits(
    docs, code, sizes=sizes, window_chars=c.window_chars, seed=c.data_seed
  )


def load_teacher(c, split):
  """(logits_fn, tokenizer, description)."""
  if c.teacher == "smollm2":
    cfg, params, tok = lm.load_smollm2()
    desc = "SmolLM2-135M-Instruct (Q4_1 GGUF), byte-level BPE 49,152"
  elif c.teacher == "gemma3":
    cfg, params, tok = lm.load_gemma3()
    desc = "Gemma-3-270M (Q4_K_M GGUF), SentencePiece 262,144"
  elif c.teacher == "random":
    tok = S.train_bpe(
      split["train"], vocab_size=c.random_teacher.vocab, style=("bytelevel")
    )
    t = c.random_teacher
    cfg = lm.small_config(
      tok.vocab_size, d_model=t.d_model, n_layers=t.n_layers
    )
    params = lm.init_params(jax.random.key(123), cfg, std=0.5)
    desc = (
      f"random-init {t.n_layers}-layer teacher, byte-level BPE {tok.vocab_size}"
    )
  else:
    raise ValueError(
      f"teacher must be 'smollm2', 'gemma3' or 'random', got {c.teacher!r}"
    )
  f = jax.jit(lambda p, x: lm.forward(p, x, config=cfg)[0])
  return (lambda x: f(params, x)), tok, desc


def prepare(c, workdir):
  """Tokenizes, aligns and caches the teacher once: the arrays every sweep of
  the run reads.

  Returns:
    ``(data, stats)``: ``data`` holds the student's ``train`` / ``eval`` /
    ``code`` arrays, the correspondence tables (``table``, ``table_lex`` and,
    with ``sola_hard``, ``table_hard``) and, with a same-tokenizer method, the
    ``*_tt`` arrays in the teacher's tokens; ``stats`` what the run reports
    about the texts, the tokenizers and the teacher cache.
  """
  split, wins = load_texts(c)
  t0 = time.time()
  s_tok = S.train_bpe(
    split["train"], vocab_size=c.student_vocab, style=("metaspace")
  )
  logits_fn, t_tok, t_desc = load_teacher(c, split)
  al = {
    k: S.align_texts(w, t_tok, s_tok, max_len=c.max_len)
    for k, w in wins.items()
  }
  tc = time.time()
  caches, cache = _cache_teacher(c, workdir, logits_fn, al)
  cache_s = time.time() - tc
  t_str = S.token_strings(t_tok)
  s_str = S.token_strings(s_tok)
  tables = _correspondence_tables(c, al["calib"], caches["calib"], t_str, s_str)
  tr, ev = al["train"], al["eval"]
  teacher_bpb = float(
    S.bits_per_byte(
      jnp.asarray(caches["eval"].tok_logp.sum(1)), jnp.asarray(ev.n_bytes)
    )
  )
  data = {**_student_data(c, al, caches["train"], t_str, s_str), **tables}
  if any(m in c.methods for m in SAME_TOK):
    data.update(_same_tokenizer_data(al, caches["train"]))
  data = jax.tree.map(jnp.asarray, data)
  stats = {
    "teacher": t_desc,
    "teacher_vocab": len(t_str),
    "student_vocab": s_tok.vocab_size,
    "vocab_overlap": len(set(t_str) & set(s_str)) / len(set(s_str)),
    "windows": {k: len(a.texts) for k, a in al.items()},
    "bytes": {k: int(a.n_bytes.sum()) for k, a in al.items()},
    "teacher_tokens_cached": int(sum(int(al[k].t_len.sum()) for k in _CACHED)),
    "teacher_cache_s": cache_s,
    "teacher_cache_bytes_per_token": cache.bytes_per_token,
    "blocks_per_window": {
      k: float(a.blk_valid.sum(1).mean()) for k, a in al.items()
    },
    "tokens_per_block": {
      "teacher": float((tr.t_len - 1).sum() / tr.blk_valid.sum()),
      "student": float((tr.s_len - 1).sum() / tr.blk_valid.sum()),
    },
    "teacher_bpb_eval": teacher_bpb,
    "prepare_s": time.time() - t0,
  }
  return data, stats


# the splits whose teacher predictions are cached
_CACHED = ("train", "calib", "eval")


def _cache_teacher(c, workdir, logits_fn, al):
  """The teacher's top-``kc`` predictions on the cached splits, computed once
  per workdir.

  Returns:
    ``({split: its S.TeacherCache}, the cache of all of them)``.
  """
  cat = lambda f: np.concatenate([getattr(al[k], f) for k in _CACHED])
  cache = S.cache_teacher(
    logits_fn,
    cat("t_tokens"),
    cat("t_len"),
    top_k=c.kc,
    batch_size=c.teacher_batch,
    directory=f"{workdir}/teacher_cache",
  )
  cuts = np.cumsum([len(al[k].texts) for k in _CACHED])[:-1]
  # per split: (ids, logp, tok_logp)
  parts = zip(*(np.split(x, cuts) for x in cache))
  return dict(zip(_CACHED, (S.TeacherCache(*p) for p in parts))), cache


def _correspondence_tables(c, ca, calib_cache, t_str, s_str) -> dict:
  """The correspondence cost estimated on the calibration alignment ``ca`` (soft
  counts, and hard counts for ``sola_hard``) and the lexical table of the
  ``sola_lexical`` ablation."""
  cid, clp = S.gather_cache(calib_cache, ca.blk_t_pos)
  v = ca.blk_valid
  args = (ca.blk_t_id[v], ca.blk_s_id[v], cid[v], clp[v])
  out = {
    "table": S.estimate_correspondence(
      *args, t_strings=t_str, s_strings=s_str, r=c.r
    ),
    "table_lex": S.lexical_table(t_str, s_str, r=c.r),
  }
  if "sola_hard" in c.methods:
    out["table_hard"] = S.estimate_correspondence(
      *args, t_strings=t_str, s_strings=s_str, r=c.r, soft_counts=False
    )
  return out


def _student_data(c, al, train_cache, t_str, s_str) -> dict:
  """The student's training arrays (its tokens, the aligned blocks, the
  teacher's cached top-k, the MinED-style map and the ALM chunk maps) and its
  held-out and code-transfer tokens."""
  tr, ev, cd = al["train"], al["eval"], al["code"]
  tid, tlp = S.gather_cache(train_cache, tr.blk_t_pos)
  uniq = np.unique(tid[..., : c.k])
  lut = np.zeros(len(t_str), np.int32)
  lut[uniq] = S.mined_map([t_str[i] for i in uniq], s_str)
  train = {
    "tokens": tr.s_tokens,
    "len": tr.s_len,
    "blk_pos": tr.blk_s_pos,
    "valid": tr.blk_valid,
    "t_ids": tid,
    "t_logp": tlp,
    "mined": lut[tid[..., : c.k]],
    # ALM-style chunk loss: token -> block maps and the teacher's realised-token
    # log-probs
    "s_block": tr.s_block,
    "t_block": tr.t_block,
    "t_tok_logp": train_cache.tok_logp,
  }
  texts = lambda a: {"tokens": a.s_tokens, "len": a.s_len, "n_bytes": a.n_bytes}
  return {"train": train, "eval": texts(ev), "code": texts(cd)}


def _same_tokenizer_data(al, train_cache) -> dict:
  """The same-tokenizer reference: the student reads the teacher's tokens; every
  teacher position is an aligned pair (one MCC block per token), distilled on
  the cached top-k."""
  tr, ev, cd = al["train"], al["eval"], al["code"]
  t_len = tr.t_len
  n_pos = tr.t_tokens.shape[1] - 1
  pos = np.broadcast_to(np.arange(n_pos, dtype=np.int32), (len(t_len), n_pos))
  return {
    "train_tt": {
      "tokens": tr.t_tokens,
      "len": t_len,
      "blk_pos": pos,
      "valid": pos < (t_len[:, None] - 1),
      "t_ids": train_cache.ids[:, :n_pos],
      "t_logp": train_cache.logp[:, :n_pos].astype(np.float32),
    },
    "eval_tt": {"tokens": ev.t_tokens, "len": ev.t_len, "n_bytes": ev.n_bytes},
    "code_tt": {"tokens": cd.t_tokens, "len": cd.t_len, "n_bytes": cd.n_bytes},
  }
