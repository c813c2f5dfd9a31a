"""LAnR evidence on a frozen LM: latent multi-hop retrieval and learned stopping.

`train_and_evaluate(config, workdir)`:
1. builds a synthetic multi-hop QA world (`jaxpapers.lanr.make_kb`) in two disconnected
   groups of entities: training questions ask about one, test questions about the other, so
   no entity or document is shared;
2. reads the frozen LM: [DOC] states of every document, and for every context c = q ⊕ docs ⊕
   [PRED] ⊕ answer the [PRED] state z and the answer statistics (entropy, teacher-forced exact
   match). Real LMs read inside their own chat template after two worked examples (a prefix
   whose KV cache is computed once). Every context is read once (`ContextStore`, saved in
   ``<workdir>/contexts.npz``): the gold prefixes, then the online loops, which share them;
3. trains P_q, P_d and two control heads (entropy labels, oracle labels) on the train
   contexts, one run per seed (``core.Sweep``);
4. runs the multi-hop loop online on the test questions per seed (`online_trace`, the loop of
   `multihop_retrieve` on the store) and reads off every stopping rule (fixed T_max, control
   heads, FLARE-like entropy threshold, trivial rules) from the same trace; runs the same
   loop with the label-free untrained and whitened cosines of the frozen states, the BM25
   pipelines (question-as-query; iterative: query, read, re-query with the bridge entity),
   and the closed-book and gold-document references;
5. writes results.json (claims judged by the rules in ``configs/default.py``, paired
   bootstrap intervals over test questions) and plots.
"""

from __future__ import annotations

import math
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from jaxpapers import core, lm
from jaxpapers import lanr as L

# ------------------------------------------------------------------------------------- data

# Two worked examples shown before every question (chat turns of the reader's own template): a
# 2-hop and a 3-hop chain, so the reader sees the answer is the last fact's object, named alone.
# Their names cannot come out of the generator (no first name, last name or syllable of
# ``jaxpapers.lanr``'s lists), so they share no entity with any question.
SHOTS = (
  (
    "In which country was Iris Tamblyn born?",
    ("Iris Tamblyn was born in Thimble.", "The city of Thimble lies in Quorthia."),
    "Quorthia",
  ),
  (
    "In which country is the head office of the company Oskar Pell works at?",
    (
      "Oskar Pell works at Hexwood Corp.",
      "The head office of Hexwood Corp is in Marrow.",
      "Marrow is a city in Estmere.",
    ),
    "Estmere",
  ),
)


def build_world(c):
  """The knowledge base in two disconnected groups: training questions ask about group 0,
  test questions about group 1, so no entity or document is shared between them."""
  kb = L.make_kb(c.data_seed, **c.kb, n_groups=2)
  train_q = L.make_questions(kb, kb.people_of(0), n_per_hop=c.n_train_per_hop, seed=c.data_seed)
  test_q = L.make_questions(kb, kb.people_of(1), n_per_hop=c.n_test_per_hop, seed=c.data_seed + 1)
  return kb, train_q, test_q


def user_content(question: str, docs=()) -> str:
  """The user turn: ``Question: q\nFacts:`` followed by the documents, each after a space."""
  return f"Question: {question}\nFacts:" + "".join(" " + d for d in docs)


def chat_pieces(tok) -> tuple[str, str]:
  """(text before the live user turn's content, text after it) under the model's template.

  The text before holds the system turn (where the template has a default one) and the worked
  examples; the text after closes the user turn and opens the assistant's ([PRED]).
  """
  shots = []
  for q, docs, a in SHOTS:
    shots += [
      {"role": "user", "content": user_content(q, docs)},
      {"role": "assistant", "content": a},
    ]
  mark = "\x00CONTENT\x00"
  text = tok.apply_chat_template(shots + [{"role": "user", "content": mark}])
  before, after = text.split(mark)
  return before, after


class Texts:
  """How questions, documents, cues and answers become token ids for one LM.

  Real LMs (``smollm2``, ``gemma3``) read every context inside their own chat template after
  the two worked examples of ``SHOTS``: the fixed text up to ``Question:`` is a prefix whose KV
  cache is computed once (``L.prefill_prefix``); a context is `` {question}\nFacts:`` ⊕ the
  documents (each `` {doc}``), [PRED] is the text that closes the user turn and opens the
  assistant's, and the answer follows it. Documents are read alone, ``doc ⊕ \nKeywords:``.
  """

  def __init__(self, c, kb, questions):
    self.lm_name = c.lm
    if c.lm in ("smollm2", "gemma3"):
      if c.lm == "smollm2":
        cfg, params, tok = lm.load_smollm2()
        self.desc = "SmolLM2-135M-Instruct (frozen, Q4_1 GGUF), chat template, 2 worked examples"
      else:
        cfg, params, tok = lm.load_gemma3()
        self.desc = "Gemma-3-270M (frozen, Q4_K_M GGUF), chat turns, 2 worked examples"
      enc = lambda s: tok.encode(s, add_bos=False)
      before, after = chat_pieces(tok)
      self.prefix_text = before + "Question:"
      prefix = np.asarray(tok.encode(self.prefix_text), np.int32)  # BOS as the model wants
      self.q = lambda s: enc(f" {s}\nFacts:")
      self.d = lambda s: enc(" " + s)
      self.a = lambda s: enc(s)
      self.pred = np.asarray(enc(after), np.int32)
      self.doc_marker = np.asarray(enc("\nKeywords:"), np.int32)
      self.doc_fn = L.lm_hidden_fn(cfg, layer=c.rep_layer)
      self.doc_params = params
      self.fn = L.lm_prefix_fn(cfg, layer=c.rep_layer)
      self.params = L.prefill_prefix(cfg, params, prefix)
      self.prefix_len = int(prefix.shape[0])
    elif c.lm == "random":
      texts = list(kb.docs) + [q.question for q in questions] + [q.answer for q in questions]
      tok = L.WordTokenizer(texts)
      r = c.random_lm
      cfg = lm.LMConfig(
        vocab_size=tok.vocab_size,
        d_model=r.d_model,
        n_layers=r.n_layers,
        n_heads=2,
        n_kv_heads=2,
        head_dim=r.d_model // 2,
        ffn_dim=2 * r.d_model,
        rope_base=10000.0,
      )
      params = lm.init_params(jax.random.key(123), cfg, std=0.5)
      self.desc = f"random-init {r.n_layers}-layer d={r.d_model} decoder, word vocabulary"
      self.prefix_text = ""
      self.q = self.d = self.a = tok.encode
      self.pred = np.asarray([tok.token_to_id("[PRED]")], np.int32)
      self.doc_marker = np.asarray([tok.token_to_id("[DOC]")], np.int32)
      self.doc_fn = self.fn = L.lm_hidden_fn(cfg, layer=c.rep_layer)
      self.doc_params = self.params = params
      self.prefix_len = 0
    else:
      raise ValueError(f"lm must be 'smollm2', 'gemma3' or 'random', got {c.lm!r}")
    self.cfg = cfg


def context_key(split: str, qi: int, docs) -> str:
  return f"{split}/{qi}/" + "-".join(str(int(d)) for d in docs)


def gold_contexts(qs, split: str, n_docs: int):
  """Every gold-prefix context c_t (t = 0..hops) of every question (``t`` documents in it)."""
  rows = []
  for qi, q in enumerate(qs):
    for t in range(q.hops + 1):
      inc = np.zeros(n_docs, bool)
      inc[list(q.gold[:t])] = True
      rows.append(
        dict(
          key=context_key(split, qi, q.gold[:t]),
          q=qi,
          docs=tuple(q.gold[:t]),
          t=t,
          hops=q.hops,
          next_doc=q.gold[t] if t < q.hops else -1,
          in_context=inc,
          sufficient=t == q.hops,
        )
      )
  return rows


_READ = {}


def _reader(fn):
  if fn not in _READ:
    _READ[fn] = jax.jit(lambda p, i, n, pr, a, al: L.read_context(fn, p, i, n, pr, a, al))
  return _READ[fn]


def read_rows(T: Texts, seqs, answers, width, bs):
  """`read_context` over ragged contexts in fixed-shape batches (one compilation per width).

  ``width`` is the buffer width: it must hold every context, its [PRED] tokens and its answer.
  """
  need = max(len(s) + len(T.pred) + len(a) for s, a in zip(seqs, answers))
  if need > width:
    raise ValueError(f"width={width} cannot hold a context with [PRED] and answer ({need} tokens)")
  ids, n = L.pad_tokens(seqs, width=width)
  ai, al = L.pad_tokens(answers)
  out = []
  f = _reader(T.fn)
  for i in range(0, len(seqs), bs):
    sl = slice(i, i + bs)
    pad = bs - len(ids[sl])
    pad2 = lambda x: np.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))
    r = f(T.params, pad2(ids[sl]), pad2(n[sl]), T.pred, pad2(ai[sl]), pad2(al[sl]))
    out.append(jax.tree.map(lambda x: np.asarray(x)[: bs - pad], r))
  return {k: np.concatenate([o[k] for o in out]) for k in out[0]}


def _bucket(n, step):
  return int(step * math.ceil(n / step))


FIELDS = ("z", "h_answer", "h_pred", "correct", "logp")


class ContextStore:
  """Every context the experiment reads, read by the LM once (memoised, saved in the workdir).

  A context is a question and the documents in it, in order; its key is
  ``split/question/doc-doc-...``. The online loops of every method and seed, the gold prefixes
  and the baselines share contexts (the empty context, correct retrievals), so each is read
  once. The store is saved to ``<workdir>/contexts.npz`` after every batch of new reads, so a
  killed run resumes without reading them again.
  """

  def __init__(self, T: Texts, questions: dict, docs_tok, ans_tok: dict, c, path: str | None):
    self.T, self.questions, self.docs_tok, self.ans_tok = T, questions, docs_tok, ans_tok
    self.c, self.path = c, path
    self.memo: dict[str, dict] = {}
    self.n_read = 0
    if path and os.path.exists(path):
      try:
        z = core.cache.read_arrays(path)
      except core.CorruptFileError as e:  # torn or altered: read every context again
        logging.warning("%s; reading its contexts again", e)
      else:
        keys = [str(k) for k in z["keys"]]
        for i, k in enumerate(keys):
          self.memo[k] = {f: z[f][i] for f in FIELDS}

  def ids(self, key: str) -> list[int]:
    split, qi, docs = key.split("/")
    q = self.questions[split][int(qi)]
    ds = [int(d) for d in docs.split("-")] if docs else []
    return self.T.q(q.question) + [x for d in ds for x in self.docs_tok[d]]

  def read(self, keys) -> dict:
    """``{field: [len(keys), ...]}`` for the contexts ``keys`` (reading the missing ones)."""
    missing = list(dict.fromkeys(k for k in keys if k not in self.memo))
    if missing:
      seqs = [self.ids(k) for k in missing]
      ans = [self.ans_tok[k.split("/")[0]][int(k.split("/")[1])] for k in missing]
      extra = len(self.T.pred) + max(len(a) for a in ans)
      widths = np.asarray([_bucket(len(s) + extra, self.c.width_bucket) for s in seqs])
      for w in sorted(set(widths.tolist())):
        idx = np.flatnonzero(widths == w)
        r = read_rows(self.T, [seqs[i] for i in idx], [ans[i] for i in idx], w, self.c.lm_batch)
        for j, i in enumerate(idx):
          self.memo[missing[i]] = {f: np.asarray(r[f][j]) for f in FIELDS}
        self.n_read += len(idx)
        self.save()
    return {f: np.stack([self.memo[k][f] for k in keys]) for f in FIELDS}

  def save(self):
    if not self.path:
      return
    keys = list(self.memo)
    arrays = {f: np.stack([self.memo[k][f] for k in keys]) for f in FIELDS}
    core.cache.write_arrays(
      self.path, {"keys": np.asarray(keys), **arrays}
    )  # atomic, digest-checked


def online_trace(store: ContextStore, split: str, n_q: int, score_fn, t_max: int, final=True):
  """The multi-hop loop of ``L.multihop_retrieve`` (no control head), run hop by hop on the
  store: at hop t the context c_t (question ⊕ the documents retrieved so far) is read, and the
  document ``argmax_{d not retrieved} score_fn(z_t)[d]`` is appended (ties: the lower id).

  Args:
    store: the `ContextStore`.
    split: which questions ('train' or 'test'); n_q: how many.
    score_fn: ``z [B, H] -> scores [B, N]``.
    t_max: retrieval calls.
    final: also read the context after the last call (its answer statistics); False stops
      after the t_max retrievals (what support recall needs).

  Returns:
    dict of doc_ids int [B, t_max] and, for the steps read (t_max + 1, or t_max without
    ``final``), z [B, S, H], h_answer, h_pred, logp [B, S], correct bool [B, S].
  """
  retrieved = [[] for _ in range(n_q)]
  steps = []
  for t in range(t_max + 1):
    if t == t_max and not final:
      break
    r = store.read([context_key(split, qi, retrieved[qi]) for qi in range(n_q)])
    steps.append(r)
    if t < t_max:
      s = np.array(score_fn(jnp.asarray(r["z"])), np.float64)
      for qi in range(n_q):
        s[qi, retrieved[qi]] = -np.inf
      d = np.argmax(s, axis=1)
      for qi in range(n_q):
        retrieved[qi].append(int(d[qi]))
  out = {"doc_ids": np.asarray(retrieved, np.int64).reshape(n_q, t_max)}
  for f in FIELDS:
    out[f] = np.stack([st[f] for st in steps], axis=1)
  return out


def prepare(c, workdir):
  t0 = time.time()
  kb, train_q, test_q = build_world(c)
  T = Texts(c, kb, train_q + test_q)
  docs_tok = [T.d(d) for d in kb.docs]
  dt, dl = L.pad_tokens(docs_tok)
  N = len(kb.docs)
  rows = {"train": gold_contexts(train_q, "train", N), "test": gold_contexts(test_q, "test", N)}
  qs = {"train": train_q, "test": test_q}
  ans = {k: [T.a(q.answer) for q in v] for k, v in qs.items()}
  os.makedirs(workdir, exist_ok=True)
  store = ContextStore(T, qs, docs_tok, ans, c, os.path.join(workdir, "contexts.npz"))
  doc_path = os.path.join(workdir, "documents.npz")
  tl = time.time()
  doc_h = core.cached_arrays(
    doc_path,
    lambda: {
      "h": np.asarray(
        L.encode_documents(T.doc_fn, T.doc_params, dt, dl, T.doc_marker, batch_size=c.lm_batch)
      )
    },
  )["h"]
  feats = {"doc": {"h": doc_h}}
  for k in ("train", "test"):
    feats[k] = store.read([r["key"] for r in rows[k]])
  stats = {
    "lm": T.desc,
    "documents": N,
    "train_questions": len(train_q),
    "test_questions": len(test_q),
    "test_questions_per_hop": {h: sum(q.hops == h for q in test_q) for h in (1, 2, 3)},
    "train_contexts": len(rows["train"]),
    "test_contexts": len(rows["test"]),
    "entities_shared_train_test": len(
      {e for q in train_q for g in q.gold for e in kb.facts[g][1:]}
      & {e for q in test_q for g in q.gold for e in kb.facts[g][1:]}
    ),
    "doc_tokens_mean": float(np.mean(dl)),
    "prefix_tokens": T.prefix_len,
    "question_tokens_mean": float(np.mean([len(T.q(q.question)) for q in test_q])),
    "gold_read_s": time.time() - tl,
  }
  world = dict(kb=kb, train_q=train_q, test_q=test_q, T=T, rows=rows, ans=ans, store=store)
  stats["prepare_s"] = time.time() - t0
  return world, feats, stats


# --------------------------------------------------------------------------- head training


def lanr_cfg(c):
  return L.LAnRConfig(
    rep_dim=c.rep_dim,
    rep_layer=c.rep_layer,
    t_max=c.t_max,
    tau_stop=c.tau_stop,
    tau_ret=c.tau_ret,
    lambda_ret=c.lambda_ret,
    lambda_ctl=c.lambda_ctl,
    control_width=c.control_width,
  )


def make_sweep(c, hidden):
  cfg = lanr_cfg(c)
  tx = optax.adamw(c.lr, weight_decay=c.weight_decay)

  def init_fn(hp, key, data):
    k1, k2 = jax.random.split(key)
    heads = L.init_retrieval_heads(k1, hidden, rep_dim=c.rep_dim)
    ctl = L.init_control_head(k2, hidden, width=c.control_width)
    p = {"heads": heads, "ctl_entropy": ctl, "ctl_oracle": ctl}
    return p, tx.init(p)

  def loss_fn(p, data):
    batch = {k: data[k] for k in ("z", "doc_h", "next_doc", "in_context")}
    loss, aux = L.lanr_loss(
      p["heads"], p["ctl_entropy"], dict(batch, ctl_label=data["y_entropy"]), cfg=cfg
    )
    zo = jax.lax.stop_gradient(data["z"])
    ctl_o = L.control_loss(L.control_logits(p["ctl_oracle"], zo), data["y_oracle"])
    return loss + cfg.lambda_ctl * ctl_o, dict(aux, ctl_oracle=ctl_o)

  def step_fn(state, hp, key, step, data):
    p, opt = state
    (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(p, data)
    upd, opt = tx.update(g, opt, p)
    return (optax.apply_updates(p, upd), opt), {"loss": loss, **aux}

  return core.Sweep(init_fn, step_fn)


# ------------------------------------------------------------------------------ evaluation


def _auroc(score, label):
  return float(L.auroc(jnp.asarray(score, jnp.float32), jnp.asarray(label)))


def _prefix_recall(doc_ids, n, gold):
  """Support recall of the first n[b] retrieved documents of each row."""
  return np.asarray([float(set(g) <= set(d[:k].tolist())) for d, k, g in zip(doc_ids, n, gold)])


def _rule_outcomes(n, doc_ids, gold, correct, t_max: int) -> dict:
  """Per question, what a stopping rule gets from one online trace.

  Args:
    n: ``[Q]`` retrieval calls the rule makes (capped at ``t_max``).
    doc_ids: ``[Q, t_max]`` documents retrieved in order.
    gold: per question, its gold documents.
    correct: ``[Q, t_max + 1]`` exact match of the answer after ``k`` calls (column 0: closed
      book).
    t_max: the largest number of calls.

  Returns:
    ``{"calls", "recall", "em"}``: lists of ``[Q]`` floats.
  """
  n = np.minimum(n, t_max).astype(np.int64)
  return {
    "calls": n.astype(float).tolist(),
    "recall": _prefix_recall(doc_ids, n, gold).tolist(),
    "em": np.asarray(correct)[np.arange(len(n)), n].astype(float).tolist(),
  }


def evaluate_seed(c, world, feats, p, eps):
  """Every stopping rule on one seed's online trace (per test question), and the heads'
  next-hop accuracy on the gold prefixes."""
  test_q = world["test_q"]
  heads = jax.tree.map(jnp.asarray, p["heads"])
  emb = L.doc_embedding(heads, jnp.asarray(feats["doc"]["h"]))
  score = lambda z: L.query_embedding(heads, z) @ emb.T
  tr = online_trace(world["store"], "test", len(test_q), score, c.t_max, final=True)
  gold = [q.gold for q in test_q]
  d_ids = tr["doc_ids"]
  z = jnp.asarray(tr["z"])
  rules = {
    "fixed": np.full(len(test_q), c.t_max),
    "entropy_control": np.asarray(
      L.stop_hops(jax.nn.sigmoid(L.control_logits(p["ctl_entropy"], z)), c.tau_stop)
    ),
    "oracle_control": np.asarray(
      L.stop_hops(jax.nn.sigmoid(L.control_logits(p["ctl_oracle"], z)), c.tau_stop)
    ),
    "flare_entropy": np.asarray(
      L.stop_hops(L.entropy_threshold_stop(jnp.asarray(tr["h_pred"]), eps["pred"]), 0.5)
    ),
    "one_call": np.ones(len(test_q), np.int64),
    "oracle_hops": np.asarray([q.hops for q in test_q]),
  }
  out = {}
  correct = np.asarray(tr["correct"])
  for name, n in rules.items():
    out[name] = _rule_outcomes(n, d_ids, gold, correct, c.t_max)
  out["closed_book_em"] = correct[:, 0].astype(float).tolist()
  out["next_hop"] = next_hop_accuracy(score, feats["test"]["z"], world["rows"]["test"])
  out["next_hop_train"] = next_hop_accuracy(score, feats["train"]["z"], world["rows"]["train"])
  rows = world["rows"]["test"]
  zt = jnp.asarray(feats["test"]["z"])
  suff = np.asarray([r["sufficient"] for r in rows])
  pe = np.asarray(jax.nn.sigmoid(L.control_logits(p["ctl_entropy"], zt)))
  po = np.asarray(jax.nn.sigmoid(L.control_logits(p["ctl_oracle"], zt)))
  out["control_auroc"] = {"entropy": _auroc(pe, suff), "oracle": _auroc(po, suff)}
  out["stop_accuracy"] = {
    "entropy": float(((pe > c.tau_stop) == suff).mean()),
    "oracle": float(((po > c.tau_stop) == suff).mean()),
  }
  return out


def next_hop_accuracy(score_fn, z, rows) -> dict:
  """Teacher-forced retrieval on gold prefixes: is the next gold document the best-scoring
  document not in the context? Overall and for the first hop (the empty context)."""
  inc = np.stack([r["in_context"] for r in rows])
  nxt = np.asarray([r["next_doc"] for r in rows])
  t = np.asarray([r["t"] for r in rows])
  s = np.where(inc, -np.inf, np.asarray(score_fn(jnp.asarray(z)), np.float64))
  hit = s.argmax(1) == nxt
  has = nxt >= 0
  return {"all": float(hit[has].mean()), "hop1": float(hit[has & (t == 0)].mean())}


def _ms(x):
  x = np.asarray(x, np.float64)
  return {
    "mean": float(x.mean()),
    "std": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
    "ci95": core.ci95_halfwidth(x) if len(x) > 1 else float("nan"),
    "per_seed": x.tolist(),
  }


METHODS = ("fixed", "entropy_control", "oracle_control", "flare_entropy", "one_call", "oracle_hops")
FROZEN = ("untrained_cosine", "whitened_cosine")
ITERATIVE = ("bm25_iterative_with_question", "bm25_iterative_bridge")


def _entropy_auroc(h, sufficient) -> float:
  """AUROC of low entropy (-h) as a predictor of a sufficient context (the paper's signal)."""
  return _auroc(-np.asarray(h), sufficient)


def half_width(b) -> float | None:
  """The larger distance from a bootstrap estimate to its interval's bounds (None: no spread)."""
  if not (np.isfinite(b.lo) and np.isfinite(b.hi)):
    return None
  return float(max(b.estimate - b.lo, b.hi - b.estimate))


def paired_ci(a, b, n_boot: int) -> dict:
  """Mean of ``a - b`` over items and its 95% paired-bootstrap interval (``core.stats``)."""
  r = core.paired_bootstrap(np.asarray(a, float), np.asarray(b, float), n_resamples=n_boot, seed=0)
  return {"mean": r.estimate, "lo": r.lo, "hi": r.hi, "ci": half_width(r), "n": r.n}


def auroc_ci(score, label, group, n_boot: int, strata=None) -> dict:
  """AUROC of ``score`` for ``label`` and its 95% bootstrap interval over groups (questions).

  AUROC = P(score_pos > score_neg) + P(tie) / 2 over (positive, negative) pairs, only pairs in
  the same stratum when ``strata`` is given (e.g. the number of documents in the context, so
  that counting documents cannot separate the pairs). The interval resamples whole groups
  (every context of a question together) with ``core.paired_bootstrap``: the items are the
  group ids, the statistic is the AUROC of the resampled groups (each pair weighted by how
  often its two groups were drawn), against a constant arm that scores 0.

  Args:
    score, label, group: [M] per-context score, 0/1 label and group id; strata: optional [M].
    n_boot: bootstrap resamples.

  Returns:
    ``{'auroc', 'lo', 'hi', 'ci'}`` (``ci``: the larger distance to a bound); AUROC is 0.5
    when no pair exists.
  """
  score = np.asarray(score, np.float64)
  label = np.asarray(label).astype(bool)
  _, g = np.unique(np.asarray(group), return_inverse=True)
  G = int(g.max()) + 1
  st = np.zeros(len(score)) if strata is None else np.asarray(strata)
  pos, neg = np.flatnonzero(label), np.flatnonzero(~label)
  same = (st[pos][:, None] == st[neg][None, :]).astype(np.float64)
  comp = np.where(score[pos][:, None] > score[neg][None, :], 1.0, 0.0)
  comp = np.where(score[pos][:, None] == score[neg][None, :], 0.5, comp) * same
  gp, gn = g[pos], g[neg]

  def stat(x, axis=-1):
    x = np.asarray(x)
    rows = x.reshape(-1, x.shape[-1])
    w = np.stack([np.bincount(r.astype(np.int64), minlength=G) for r in np.maximum(rows, 0)])
    wp, wn = w[:, gp].astype(np.float64), w[:, gn].astype(np.float64)  # [k, n_pos], [k, n_neg]
    num = np.sum((wp @ comp) * wn, axis=1)
    den = np.sum((wp @ same) * wn, axis=1)
    out = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.5)
    out = np.where(np.all(rows < 0, axis=1), 0.0, out)  # the constant arm scores 0
    return out.reshape(x.shape[:-1])

  ids = np.arange(G, dtype=np.float64)
  r = core.paired_bootstrap(ids, -np.ones(G), statistic=stat, n_resamples=n_boot, seed=0)
  return {"auroc": r.estimate, "lo": r.lo, "hi": r.hi, "ci": half_width(r)}


def per_question(per_seed: list[dict], method: str, key: str) -> np.ndarray:
  """[Q] the per-question value of ``method``'s ``key``, averaged over seeds."""
  return np.mean([np.asarray(r[method][key], np.float64) for r in per_seed], axis=0)


def aggregate_methods(per_seed: list[dict], hops) -> dict:
  """Per method, mean / std / 95% half-width over seeds of its per-question means.

  Args:
    per_seed: one ``{method: {"calls", "em", "recall": [Q]}}`` per seed.
    hops: ``[Q]`` gold hop count of each test question (multi-hop: >= 2).
  """
  hops = np.asarray(hops)

  def agg(name, key, mask=None):
    vals = []
    for r in per_seed:
      x = np.asarray(r[name][key])
      vals.append(x[mask].mean() if mask is not None else x.mean())
    return _ms(vals)

  return {
    m: {
      "calls": agg(m, "calls"),
      "em": agg(m, "em"),
      "recall_all": agg(m, "recall"),
      "recall_multihop": agg(m, "recall", hops >= 2),
      **{f"recall_{h}hop": agg(m, "recall", hops == h) for h in (1, 2, 3)},
      **{f"calls_{h}hop": agg(m, "calls", hops == h) for h in (1, 2, 3)},
    }
    for m in METHODS
  }


def reference_metrics(ref: dict, per_seed: list[dict], hops, t_max: int, n_docs: int) -> dict:
  """The seed-independent references: BM25 with the question as query (top-1 and top-t_max),
  iterative BM25 (t_max calls), the frozen-state cosines (t_max calls), t_max random
  documents (closed form), the closed-book and the gold-documents reader."""
  hops = np.asarray(hops)
  multi = hops >= 2
  refs = {}
  for k in ("bm25_top1", f"bm25_top{t_max}", "bm25_iterative", *ITERATIVE, *FROZEN):
    if k not in ref:  # stores written before the two re-query forms were kept apart
      continue
    r = np.asarray(ref[k]["recall"], np.float64)
    refs[k] = {"recall_all": float(r.mean()), "recall_multihop": float(r[multi].mean())}
    refs[k].update({f"recall_{h}hop": float(r[hops == h].mean()) for h in (1, 2, 3)})
  if "variant" in ref["bm25_iterative"]:
    refs["bm25_iterative"]["variant"] = ref["bm25_iterative"]["variant"]
  # a random choice of t_max distinct documents holds all h gold ones with prob C(N-h, k-h)/C(N, k)
  rnd = [math.comb(n_docs - h, t_max - h) / math.comb(n_docs, t_max) for h in hops]
  refs["random_docs"] = {
    "recall_all": float(np.mean(rnd)),
    "recall_multihop": float(np.mean(np.asarray(rnd)[multi])),
  }
  refs["closed_book"] = {"em": float(np.mean(ref["closed_book_em"]))}
  refs["gold_docs"] = {"em": float(np.mean(ref["gold_docs_em"]))}
  for h in (1, 2, 3):
    refs["gold_docs"][f"em_{h}hop"] = float(np.mean(np.asarray(ref["gold_docs_em"])[hops == h]))
  return refs


def claim_values(per_seed, ref, hops, sufficiency, t_max: int, n_boot: int) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure; ``metrics.derived``).

  Every comparison is paired over the test questions: a LAnR method's per-question value is
  its mean over the head seeds, a reference's is seed-independent; the noise is the 95%
  paired-bootstrap half-width over questions (``core.paired_bootstrap``, seed 0). Calls saved =
  t_max - the controlled method's calls.
  """
  hops = np.asarray(hops)
  multi = hops >= 2
  rec = per_question(per_seed, "fixed", "recall")
  bm = np.asarray(ref["bm25_iterative"]["recall"], np.float64)
  out = {}
  d = paired_ci(rec[multi], bm[multi], n_boot)
  out["lanr_minus_bm25_iter_multihop_recall"] = d["mean"]
  out["lanr_minus_bm25_iter_multihop_recall_ci"] = d["ci"]
  for f in FROZEN:
    fr = np.asarray(ref[f]["recall"], np.float64)
    out[f"{f}_minus_bm25_iter_multihop_recall"] = float(fr[multi].mean() - bm[multi].mean())
  best = max(FROZEN, key=lambda f: np.mean(ref[f]["recall"]))
  d = paired_ci(rec, np.asarray(ref[best]["recall"], np.float64), n_boot)
  out["best_frozen_cosine"] = best
  out["trained_minus_frozen_cosine_recall"] = d["mean"]
  out["trained_minus_frozen_cosine_recall_ci"] = d["ci"]
  calls = per_question(per_seed, "entropy_control", "calls")
  d = paired_ci(t_max - calls, np.zeros_like(calls), n_boot)
  out["calls_saved_entropy_control"] = d["mean"]
  out["calls_saved_entropy_control_ci"] = d["ci"]
  em_fixed = per_question(per_seed, "fixed", "em")
  d = paired_ci(per_question(per_seed, "entropy_control", "em"), em_fixed, n_boot)
  out["em_entropy_control_minus_fixed"] = d["mean"]
  out["em_entropy_control_minus_fixed_ci"] = d["ci"]
  out["trivial_one_call_em_minus_fixed"] = float(
    np.mean(per_question(per_seed, "one_call", "em") - em_fixed)
  )
  out["entropy_auroc"] = sufficiency["entropy"]["auroc"]
  out["entropy_auroc_ci"] = sufficiency["entropy"]["ci"]
  out["entropy_auroc_same_docs"] = sufficiency["entropy_same_docs"]["auroc"]
  out["entropy_auroc_same_docs_ci"] = sufficiency["entropy_same_docs"]["ci"]
  out["train_next_hop_acc"] = float(np.mean([r["next_hop_train"]["all"] for r in per_seed]))
  return out


def bm25_diagnostics(kb, test_q, top3) -> dict:
  """Why the question-only query fails: later-hop gold documents share no entity with the
  question and are rarely in its BM25 top 3, unlike hop-1 documents."""
  out = {}
  for name, sel in (("hop1", lambda i: i == 0), ("later_hops", lambda i: i >= 1)):
    share, found = [], []
    for q, row in zip(test_q, top3):
      for i, g in enumerate(q.gold):
        if not sel(i):
          continue
        ents = [e for e in kb.facts[g][1:] if e != q.person]
        share.append(float(any(e in q.question for e in ents) or q.person in kb.docs[g]))
        found.append(float(g in set(row.tolist())))
    out[name] = {
      "docs": len(share),
      "share_an_entity_with_question": float(np.mean(share)),
      "in_question_top3": float(np.mean(found)),
    }
  return out


def better_on(ref: dict, names, mask) -> str:
  """The name in ``names`` whose per-question ``ref[name]["recall"]`` has the higher mean over
  the questions in ``mask`` [Q] (ties: the first name): the stronger of two baselines."""
  mask = np.asarray(mask, bool)
  return max(names, key=lambda k: float(np.mean(np.asarray(ref[k]["recall"], float)[mask])))


def frozen_scorers(feats, dim: int):
  """The label-free scorers of the frozen states: the untrained cosine, and the cosine after
  one shared PCA whitening to ``dim`` directions (each side centred by its own mean: queries
  by the training contexts', documents by the index's)."""
  doc_h = jnp.asarray(feats["doc"]["h"])
  z_tr = jnp.asarray(feats["train"]["z"])
  mq, md = z_tr.mean(0), doc_h.mean(0)
  st = L.fit_whitening(jnp.concatenate([z_tr - mq, doc_h - md]), dim=dim)
  dw = L.whiten(st, doc_h - md)
  return {
    "untrained_cosine": lambda z: L.cosine_scores(z, doc_h),
    "whitened_cosine": lambda z: L.cosine_scores(L.whiten(st, z - mq), dw),
  }


def reader_check(c, workdir) -> dict:
  """The reader's preconditions alone (``config.reader_only``): gold-document and closed-book
  exact match on the test questions, with no heads and no retrieval.

  Reads, for every test question, the closed-book context (question only) and the context with
  all its gold documents, in the same prompt as the full run. Writes results.json with
  ``references.{gold_docs, closed_book}`` (as the full run) and the paired difference
  gold − closed book with its 95% paired-bootstrap interval over questions.
  """
  t0 = time.time()
  kb, train_q, test_q = build_world(c)
  T = Texts(c, kb, train_q + test_q)
  docs_tok = [T.d(d) for d in kb.docs]
  ans = {"test": [T.a(q.answer) for q in test_q]}
  os.makedirs(workdir, exist_ok=True)
  store = ContextStore(T, {"test": test_q}, docs_tok, ans, c, os.path.join(workdir, "contexts.npz"))
  closed = store.read([context_key("test", i, ()) for i in range(len(test_q))])["correct"]
  gold = store.read([context_key("test", i, q.gold) for i, q in enumerate(test_q)])["correct"]
  closed, gold = closed.astype(np.float64), gold.astype(np.float64)
  hops = np.asarray([q.hops for q in test_q])
  refs = {
    "closed_book": {"em": float(closed.mean())},
    "gold_docs": {
      "em": float(gold.mean()),
      **{f"em_{h}hop": float(gold[hops == h].mean()) for h in (1, 2, 3)},
    },
    "gold_minus_closed_book_em": paired_ci(gold, closed, c.n_boot),
  }
  metrics = {
    "data": {
      "lm": T.desc,
      "documents": len(kb.docs),
      "test_questions": len(test_q),
      "contexts_read": len(store.memo),
    },
    "references": refs,
  }
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    notes=f"{T.desc}; the reader preconditions alone, {len(test_q)} test questions.",
    wall_time_s=time.time() - t0,
  )
  return metrics


def train_and_evaluate(config, workdir) -> dict:
  c = config
  if c.get("reader_only", False):
    return reader_check(c, workdir)
  core.validate_seeds(c.seeds, name="seeds")
  t0 = time.time()
  world, feats, stats = prepare(c, workdir)
  test_q = world["test_q"]
  hops = np.asarray([q.hops for q in test_q])
  rows_tr = world["rows"]["train"]
  # control labels: entropy rule (a) with eps = median train H̄; oracle rule (b)
  h_tr = feats["train"]["h_answer"]
  eps = {"answer": float(np.median(h_tr)), "pred": float(np.median(feats["train"]["h_pred"]))}
  y_ent = np.asarray(L.entropy_labels(jnp.asarray(h_tr), eps["answer"]))
  y_orc = np.asarray([float(r["sufficient"]) for r in rows_tr], np.float32)
  data = {
    "z": feats["train"]["z"],
    "doc_h": feats["doc"]["h"],
    "next_doc": np.asarray([r["next_doc"] for r in rows_tr], np.int32),
    "in_context": np.stack([r["in_context"] for r in rows_tr]),
    "y_entropy": y_ent,
    "y_oracle": y_orc,
  }
  data = jax.tree.map(jnp.asarray, data)
  hidden = data["z"].shape[1]
  store = core.CellStore(f"{workdir}/cells")
  keys = jax.random.split(jax.random.key(c.seed), c.seeds)
  res = make_sweep(c, hidden).run(
    {"lr": np.full(c.seeds, c.lr, np.float32)},
    keys,
    num_steps=c.steps,
    chunk_size=c.steps,
    data=data,
    desc=f"heads: {c.seeds} seeds",
    show_progress=False,
  )
  train_hist = {k: np.asarray(v)[:, -1].tolist() for k, v in res.history.items()}

  # seed-independent references: the frozen-state cosines (online, no head), the BM25
  # pipelines (no LM), the closed-book and gold-documents reader (gold prefixes)
  def compute_ref(_):
    kb = world["kb"]
    gold = [q.gold for q in test_q]
    out = {}
    for name, score in frozen_scorers(feats, c.rep_dim).items():
      tr = online_trace(world["store"], "test", len(test_q), score, c.t_max, final=False)
      out[name] = {"recall": L.support_recall(tr["doc_ids"], gold).tolist()}
      out[name]["next_hop"] = next_hop_accuracy(score, feats["test"]["z"], world["rows"]["test"])
    q_texts, docs = [q.question for q in test_q], list(kb.docs)
    for k in (1, c.t_max):
      r = L.question_as_query_retrieve(q_texts, docs, hops=k)
      out[f"bm25_top{k}"] = {"recall": L.support_recall(r, gold).tolist()}
    top3 = L.question_as_query_retrieve(q_texts, docs, hops=3)
    out["bm25_diagnostics"] = bm25_diagnostics(kb, test_q, top3)
    # two re-query forms (question + bridge entity, or the bridge entity alone); the claim
    # compares with the better of the two on the multi-hop questions
    bridge = [f[2] for f in kb.facts]
    multi = np.asarray([q.hops >= 2 for q in test_q])
    for name, keep in (("bm25_iterative_with_question", True), ("bm25_iterative_bridge", False)):
      r = L.iterative_bm25_retrieve(q_texts, docs, bridge, hops=c.t_max, keep_question=keep)
      out[name] = {"recall": L.support_recall(r, gold).tolist()}
    best = better_on(out, ITERATIVE, multi)
    out["bm25_iterative"] = dict(out[best], variant=best)
    rows = world["rows"]["test"]
    last = [i for i, r in enumerate(rows) if r["sufficient"]]
    first = [i for i, r in enumerate(rows) if r["t"] == 0]
    out["gold_docs_em"] = feats["test"]["correct"][last].astype(float).tolist()
    out["closed_book_em"] = feats["test"]["correct"][first].astype(float).tolist()
    return out

  ref = store.get_or_compute("references", compute_ref)

  per_seed = []
  for s in range(c.seeds):
    p = jax.tree.map(lambda x, s=s: np.asarray(x[s]), res.state[0])

    def compute(_, p=p):
      ts = time.time()
      out = evaluate_seed(c, world, feats, p, eps)
      out["online_s"] = time.time() - ts
      return out

    per_seed.append(store.get_or_compute(f"seed/{s}", compute))

  # ---- aggregate
  methods = aggregate_methods(per_seed, hops)
  refs = reference_metrics(ref, per_seed, hops, c.t_max, stats["documents"])
  refs["bm25_question_only_diagnostics"] = ref["bm25_diagnostics"]
  # the paper's motivating observation, on held-out gold-prefix contexts
  rows_te = world["rows"]["test"]
  suff = np.asarray([r["sufficient"] for r in rows_te])
  ndocs = np.asarray([r["t"] for r in rows_te], np.float32)
  qid = np.asarray([r["q"] for r in rows_te])
  h_ans = feats["test"]["h_answer"]
  sufficiency = {
    "entropy": auroc_ci(-h_ans, suff, qid, c.n_boot),
    "entropy_same_docs": auroc_ci(-h_ans, suff, qid, c.n_boot, strata=ndocs),
    "entropy_auroc": _entropy_auroc(h_ans, suff),
    "pred_entropy_auroc": _entropy_auroc(feats["test"]["h_pred"], suff),
    "docs_in_context_auroc": _auroc(ndocs, suff),
    "control_auroc_entropy": _ms([r["control_auroc"]["entropy"] for r in per_seed]),
    "control_auroc_oracle": _ms([r["control_auroc"]["oracle"] for r in per_seed]),
    "stop_accuracy_entropy": _ms([r["stop_accuracy"]["entropy"] for r in per_seed]),
    "stop_accuracy_oracle": _ms([r["stop_accuracy"]["oracle"] for r in per_seed]),
    "entropy_label_rate_train": float(y_ent.mean()),
    "oracle_label_rate_train": float(y_orc.mean()),
    "eps": eps,
  }
  # untrained (random) projection heads: the trivial learned-query baseline on gold prefixes
  rk = L.init_retrieval_heads(jax.random.key(c.seed + 99), hidden, rep_dim=c.rep_dim)
  e_r = L.doc_embedding(rk, jnp.asarray(feats["doc"]["h"]))
  next_hop = {
    "trained_heads": _ms([r["next_hop"]["all"] for r in per_seed]),
    "trained_heads_hop1": _ms([r["next_hop"]["hop1"] for r in per_seed]),
    "trained_heads_train_contexts": _ms([r["next_hop_train"]["all"] for r in per_seed]),
    "random_heads": next_hop_accuracy(
      lambda z: L.query_embedding(rk, z) @ e_r.T, feats["test"]["z"], rows_te
    ),
    **{f: ref[f]["next_hop"] for f in FROZEN},
  }
  derived = claim_values(per_seed, ref, hops, sufficiency, c.t_max, c.n_boot)
  stats["contexts_read"] = len(world["store"].memo)
  metrics = {
    "data": stats,
    "methods": methods,
    "references": refs,
    "sufficiency": sufficiency,
    "next_hop_accuracy": next_hop,
    "train_final": train_hist,
    "online_s_per_seed": [r["online_s"] for r in per_seed],
    "derived": derived,
  }
  _report(c, workdir, metrics, t0)
  return metrics


def _report(c, workdir, metrics, t0):
  d = metrics["data"]
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    notes=f"{d['lm']}; {d['documents']} documents, {d['train_questions']} train / "
    f"{d['test_questions']} held-out questions (1-3 hops, disjoint entities); {c.seeds} seeds "
    "of the heads; synthetic multi-hop QA proxy.",
    wall_time_s=time.time() - t0,
  )
