"""The real-model tracks (SmolLM2, Gemma-3, a Hugging Face checkpoint):
detection and ablation.

A track detects heads on NoLiMa-style probes over one half of the entities and
ablates the top-k heads of each detector (and random heads) on probes over the
other half, under two protocols: *filtered* (an answer stem, ablations on the
probes the unablated model answers) and the paper's (no stem, its decode
length). Every generation is a cell of the workdir's ``core.CellStore``
(``cells/``, ``locos.ablation_cells``), so a run resumes cell by cell.
"""

from __future__ import annotations

import logging
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.locos import evaluate
from jaxpapers import core, lm, locos

_CHECKPOINT_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def checkpoint_args(r):
  """``(directory, dtype)`` of the 'checkpoint' track from the real-model config
  block, checked."""
  if not r.checkpoint_dir:
    raise ValueError(
      "the 'checkpoint' track needs --config.real.checkpoint_dir=<a Hugging "
      "Face checkpoint directory: config.json, *.safetensors, tokenizer.json>"
    )
  name = r.checkpoint_dtype
  core.validate_choice(
    name, name="real.checkpoint_dtype", allowed=tuple(_CHECKPOINT_DTYPES)
  )
  return r.checkpoint_dir, _CHECKPOINT_DTYPES[name]


def _load_checkpoint(r):
  path, dtype = checkpoint_args(r)
  return lm.load_safetensors(path, dtype=dtype)


# track name -> (loader of the real-model config block, label for the report and
# notes)
_LOADERS = {
  "smollm2": lambda r: lm.load_smollm2(),
  "gemma3": lambda r: lm.load_gemma3(),
  "checkpoint": _load_checkpoint,
}
REAL_MODELS = {
  t: (_LOADERS[t], label) for t, label in evaluate.TRACK_LABELS.items()
}


def load_or_skip(c, run_config, workdir, track, prefix):
  """``(cfg, params, tok, label)`` of a track's model; when its weights are not
  installed, writes a results.json without verdicts and returns its metrics
  ``{<prefix>/skipped: why}``."""
  loader, label = REAL_MODELS[track]
  try:
    return (*loader(c.real), label)
  except lm.ModelNotAvailable as e:
    metrics = {f"{prefix}/skipped": str(e)}
    core.write_results(
      workdir,
      metrics=metrics,
      config=run_config,
      notes=str(e),
      issue_verdicts=False,
    )
    return metrics


def gen_kw(r, tok):
  """Generation settings: `gen_batch_size` rows per call; random seeds cycle
  over blocks of `batch_size` probes (as in the committed runs, whatever the
  generation batch)."""
  kw = dict(
    max_new_tokens=r.max_steps, stop_ids=tok.stop_ids(), pad_to=r.buckets
  )
  return dict(kw, batch_size=r.gen_batch_size, seed_block=r.batch_size)


def probe_kw(r, tok, **kw):
  """The prompt settings of ``locos.make_probes`` from the real-model config
  block (``kw`` overrides them)."""
  names = (
    "filler_sentences",
    "system_prompt",
    "prompt_format",
    "shots",
    "shot_seed",
  )
  return dict(tokenizer=tok, **{n: r[n] for n in names}) | kw


def unablated(cfg):
  """``(mask, mean)`` of the unablated model: no head, zero means ([L, H] and
  [L, H, D])."""
  no_mean = jnp.zeros((cfg.n_layers, cfg.n_heads, cfg.head_dim), jnp.float32)
  return np.zeros((cfg.n_layers, cfg.n_heads), bool), no_mean


def detection(params, cfg, tok, probes, **kw):
  """A detection cell: every detector's [L, H] scores (`locos.detect_heads` with
  ``kw``), which trials were accepted and their generations."""
  scores, per = locos.detect_heads(params, cfg, probes, tok, **kw)
  return {
    "scores": {d: v.tolist() for d, v in scores.items()},
    "accepted": [bool(p.accepted) for p in per],
    "generations": [p.generation for p in per],
  }


def stem_tag(num_eval, ablation_num_eval=0):
  """Cell-name prefix of the filtered protocol's ablation cells (the baseline's:
  no `first=`)."""
  return f"stem/n={num_eval}" + (
    f"/first={ablation_num_eval}" if ablation_num_eval else ""
  )


def known_landmarks(params, cfg, tok, r, store, gen):
  """The landmarks whose city the model names with no context (the
  `parametric/known` cell)."""
  par_probes = locos.parametric_probes(
    tok, locos.LANDMARKS, system_prompt=r.system_prompt
  )
  par_texts = store.get_or_compute(
    "parametric/known",
    lambda _: locos.ablated_texts(
      params, cfg, par_probes, tok, *unablated(cfg), **gen
    ),
  )
  par_got = [
    locos.rouge1_recall(p.answer, t) for p, t in zip(par_probes, par_texts)
  ]
  return par_probes, {lc for lc, g in zip(locos.LANDMARKS, par_got) if g >= 0.5}


class RealTrack:
  """One real-model track of a run, stage by stage (see
  :func:`run_real_track`)."""

  def __init__(self, c, workdir, track, model):
    self.c, self.r, self.track, self.label = (
      c,
      c.real,
      track,
      REAL_MODELS[track][1],
    )
    self.cfg, self.params, self.tok = model
    self.t_start = time.time()
    self.store = core.CellStore(f"{workdir}/cells")
    (self.det_names, self.det_lands), (self.ev_names, self.ev_lands) = (
      locos.split_entities(c.seed, names=locos.NAMES, landmarks=locos.LANDMARKS)
    )
    self.gen = gen_kw(self.r, self.tok)
    self.timings = {}
    self.budget = self.r.time_budget_s
    self.deadline = self.t_start + self.budget if self.budget else None

  def _run(self, probes, conds, tag, gen=None, **kw):
    kw = dict(group_rows=self.r.group_rows or None) | kw
    model = (self.params, self.cfg, probes, self.tok)
    return locos.ablation_cells(
      *model, conds, self.mean_q, self.store, tag, gen or self.gen, **kw
    )

  def detect(self):
    """1-2. The landmarks the model knows (probes use only those) and detection
    on the first half of the entities."""
    r, c, tok = self.r, self.c, self.tok
    t0 = time.time()
    self.par_probes, self.known = known_landmarks(
      self.params, self.cfg, tok, r, self.store, self.gen
    )
    self.det_lands = tuple(x for x in self.det_lands if x in self.known)
    self.ev_lands = tuple(x for x in self.ev_lands if x in self.known)
    self.timings["known_landmarks_s"] = time.time() - t0
    self.probe_kw = probe_kw(r, tok, kind="nonliteral")
    det_rng = np.random.default_rng([c.seed, 1])
    self.det_probes = locos.make_probes(
      det_rng,
      num=r.num_detect,
      names=self.det_names,
      landmarks=self.det_lands,
      **self.probe_kw,
    )
    self.t0 = time.time()
    det_kw = dict(
      max_steps=r.detect_max_steps, batch_size=r.batch_size, pad_to=r.buckets
    )
    self.det = self.store.get_or_compute(
      f"detection/n={r.num_detect}",
      lambda _: detection(
        self.params,
        self.cfg,
        tok,
        self.det_probes,
        stop_ids=self.gen["stop_ids"],
        **det_kw,
      ),
    )
    self.scores = {d: np.asarray(v) for d, v in self.det["scores"].items()}
    self.timings["detection_s"] = time.time() - self.t0
    logging.info(
      "detection %.1fs, %d accepted",
      self.timings["detection_s"],
      sum(self.det["accepted"]),
    )

  def evaluation_probes(self):
    """3. Evaluation probes on the other half: the same items with an answer
       stem (ours) and
    without (the paper's protocol; identical generator state gives identical
    items), the query means and the conditions (detector top-k, random
    heads)."""
    r, c = self.r, self.c
    ev_kw = dict(
      num=r.num_eval,
      names=self.ev_names,
      landmarks=self.ev_lands,
      **self.probe_kw,
    )
    self.ev_stem = locos.make_probes(
      np.random.default_rng([c.seed, 2]), answer_prefix=True, **ev_kw
    )
    ev_paper = locos.make_probes(
      np.random.default_rng([c.seed, 2]), answer_prefix=False, **ev_kw
    )
    self.t0 = time.time()
    calib = [p.prompt_ids for p in ev_paper[: r.num_calibration]]
    self.mean_q = lm.mean_queries(
      self.params, calib, config=self.cfg, batch_size=r.batch_size
    )
    self.ks, self.dets = list(r.ks), tuple(r.detectors)
    L, H = self.cfg.n_layers, self.cfg.n_heads
    self.conds = locos.ablation_conditions(
      self.scores,
      self.dets,
      self.ks,
      L,
      H,
      r.num_random,
      jax.random.key(c.seed),
    )
    self.ev_paper = ev_paper[: r.paper_num_eval]

  def filtered_baseline(self):
    """The filtered protocol's unablated run on every probe and the probes it
    answers (the ablated ones: the answered probes among the first
    `real.ablation_num_eval` items, 0: all)."""
    r = self.r
    base_only = [cd for cd in self.conds if cd[0] == "baseline"]
    self.res_base = self._run(self.ev_stem, base_only, f"stem/n={r.num_eval}")
    base_texts = self.res_base[("baseline", 0, "texts")]
    answers = [p.answer for p in self.ev_stem]
    self.base_r1 = np.asarray(
      [locos.rouge1_recall(a, t) for a, t in zip(answers, base_texts)]
    )
    self.n_abl = int(r.ablation_num_eval)
    self.correct = evaluate.ablated_probes(answers, base_texts, self.n_abl)

  def _ordered_conditions(self):
    """(the claim's cells, the rest): random heads at the largest k (the
    random-heads claim) first among the rest, then the claim grid's k, by
    detector rank."""
    r, ks = self.r, self.ks
    claim_ks = tuple(r.claim_ks)
    first = [
      cd
      for cd in self.conds
      if cd[0] in ("locos", *r.claim_baselines) and cd[1] in claim_ks
    ]
    rest = [cd for cd in self.conds if cd[0] != "baseline" and cd not in first]
    # the first place of each detector (a dict comprehension would keep the
    # last: LOCOS and the claim's baselines, listed again in `dets`, would fall
    # behind random heads)
    rank = {}
    for d in ("locos", *r.claim_baselines, "random", *self.dets):
      rank.setdefault(d, len(rank))
    rest.sort(
      key=lambda cd: (
        cd[1] not in claim_ks,
        cd[:2] != ("random", max(ks)),
        rank[cd[0]],
        cd[1],
      )
    )
    return first, rest

  def filtered_and_parametric(self):
    """The filtered protocol and the parametric control, in priority order when
    a time budget is set: the claim's cells, the parametric control at the
    claim's k, random heads at the largest k, random heads and Wu at the claim's
    k, the other k values, the parametric control at the other k (the paper's
    protocol comes last: its decodes cost the most)."""
    r = self.r
    self.filtered_baseline()
    first, rest = self._ordered_conditions()
    stem_kw = dict(only=self.correct, deadline=self.deadline)
    tag = stem_tag(r.num_eval, self.n_abl)
    self.res_stem = self._run(self.ev_stem, first, tag, **stem_kw)
    self.res_stem.update(
      {key: v for key, v in self.res_base.items() if key != "skipped"}
    )
    self.timings["filtered_claim_cells_s"] = time.time() - self.t0
    t0 = time.time()
    self.par_ev = [
      p
      for p, lc in zip(self.par_probes, locos.LANDMARKS)
      if lc in self.ev_lands
    ]
    self.par_res = {}
    self.parametric((0, *r.claim_ks))
    self.timings["parametric_s"] = time.time() - t0
    t0 = time.time()
    more = self._run(self.ev_stem, rest, tag, **stem_kw)
    self.res_stem["skipped"] += more.pop("skipped")
    self.res_stem.update(more)
    self.timings["filtered_other_cells_s"] = time.time() - t0
    t0 = time.time()
    self.parametric(self.ks)  # the parametric control at the other k
    self.timings["parametric_s"] += time.time() - t0

  def parametric(self, ks_par):
    """Parametric recall of the evaluation-half landmarks, unablated and with
    the LOCOS heads of each k in ``ks_par`` ablated (past the deadline only
    cells already stored)."""
    for name, k, masks in [
      cd for cd in self.conds if cd[0] in ("baseline", "locos")
    ]:
      cell = f"parametric/{name}/k={k}"
      if k not in ks_par or (name, k) in self.par_res:
        continue
      late = (
        self.deadline is not None
        and cell not in self.store
        and time.time() > self.deadline
      )
      if late and name != "baseline":
        continue
      model = (self.params, self.cfg, self.par_ev, self.tok)
      texts = self.store.get_or_compute(
        cell,
        lambda _, m=masks[0]: locos.ablated_texts(
          *model, m, self.mean_q, **self.gen
        ),
      )
      self.par_res[(name, k)] = [
        locos.rouge1_recall(p.answer, t) for p, t in zip(self.par_ev, texts)
      ]

  def paper_protocol(self):
    """The paper's protocol: every probe (the first `paper_num_eval`), no stem,
    its decode length, at k in `real.paper_ks`."""
    r = self.r
    t0 = time.time()
    paper_conds = [cd for cd in self.conds if cd[1] in (0, *r.paper_ks)]
    gen = dict(self.gen, max_new_tokens=r.paper_max_steps)
    kw = dict(gen=gen, deadline=self.deadline, exempt_baseline=False)
    self.res_paper = self._run(
      self.ev_paper, paper_conds, f"paper/n={len(self.ev_paper)}", **kw
    )
    self.timings["paper_s"] = time.time() - t0

  def curves(self):
    """Curves of both protocols (`locos.collapse_curves`); the paper's is None
    when not run."""
    r, c = self.r, self.c
    self.paper_run = not np.isnan(self.res_paper[("baseline", 0)]).any()
    kw = dict(
      claim_ks=tuple(r.claim_ks), claim_baselines=tuple(r.claim_baselines)
    )
    paper, paper_ks, n = None, list(r.paper_ks), r.num_resamples
    if paper_ks and self.paper_run:
      paper_kw = dict(
        kw, claim_ks=[k for k in r.claim_ks if k in paper_ks] or paper_ks
      )
      probes = np.arange(len(self.ev_paper))
      paper = locos.collapse_curves(
        self.res_paper, self.dets, paper_ks, probes, n, c.seed, **paper_kw
      )
    filtered = locos.collapse_curves(
      self.res_stem, self.dets, self.ks, self.correct, n, c.seed, **kw
    )
    return {"filtered": filtered, "paper": paper}

  def parametric_record(self):
    """The parametric control's recall, unablated and with LOCOS heads at each
    k."""
    ks, res = self.ks, self.par_res
    at = {k: res.get(("locos", k)) for k in ks}  # None: not run
    mean = lambda v: None if v is None else float(np.mean(v))
    return {
      "num_probes": len(self.par_ev),
      "baseline": mean(res[("baseline", 0)]) if self.par_ev else float("nan"),
      "ks": ks,
      "locos": [mean(v) for v in at.values()] if self.par_ev else [],
      "per_probe": {  # recall per landmark, for paired intervals over landmarks
        "baseline": [float(x) for x in res.get(("baseline", 0), [])],
        "locos": {
          str(k): None if v is None else [float(x) for x in v]
          for k, v in at.items()
        },
      },
    }

  def metrics(self, curves):
    """The track's metrics, keyed ``<track>/...``."""
    tok, ev_stem, ks = self.tok, self.ev_stem, self.ks
    res_stem, res_paper = self.res_stem, self.res_paper
    skipped = res_stem["skipped"] + res_paper["skipped"]
    skipped += [
      f"parametric/locos/k={k}" for k in ks if ("locos", k) not in self.par_res
    ]
    paper_texts = (
      res_paper[("baseline", 0, "texts")] if self.paper_run else [""]
    )
    protocols = (
      ("filtered", res_stem, ks),
      ("paper", res_paper, list(self.r.paper_ks)),
    )
    seeds = {
      p: {k: res.get(("random", k, "seeds")) for k in kk}
      for p, res, kk in protocols
    }
    gen_tokens = [len(tok.encode(t, add_bos=False)) for t in paper_texts]
    prompt_tokens = [len(p.prompt_ids) for p in ev_stem]
    m = {
      "model": self.label,
      "entities": self._entities(),
      "num_detect_probes": len(self.det_probes),
      "accepted_detection_trials": int(sum(self.det["accepted"])),
      "num_eval_probes": len(ev_stem),
      "num_paper_probes": len(self.ev_paper),
      "num_heads": int(self.cfg.n_layers * self.cfg.n_heads),
      "eval_correct_fraction": float(np.mean(self.base_r1 >= 0.5)),
      "ablation_items": self.n_abl or len(ev_stem),
      "ablated_probes": int(self.correct.size),
      "random_seeds_used": seeds,
      "examples": {
        "stem_baseline": self.res_base[("baseline", 0, "texts")][:5],
        "paper_baseline": res_paper[("baseline", 0, "texts")][:5],
        "answers": [p.answer for p in ev_stem[:5]],
      },
      "paper_generation_tokens": {
        "mean": float(np.mean(gen_tokens)),
        "max": int(max(gen_tokens)),
      },
      "context_tokens": {
        "stem_mean": float(np.mean(prompt_tokens)),
        "max": int(max(prompt_tokens)),
      },
      "top_heads": {
        d: locos.rank_heads(self.scores[d])[:10] for d in evaluate.DETECTORS
      },
      "jaccard_vs_locos@10": {
        d: locos.jaccard_top_k(self.scores["locos"], self.scores[d], 10)
        for d in evaluate.DETECTORS[1:]
      },
      "curves": curves,
      "parametric": self.parametric_record(),
      "timings_s": self.timings,
      "time_budget_s": self.budget,
      "cells_not_run": skipped,
      "time_s": time.time() - self.t_start,
    }
    return {f"{self.track}/{k}": v for k, v in m.items()}

  def _entities(self):
    dn, en, dl, el = (
      self.det_names,
      self.ev_names,
      self.det_lands,
      self.ev_lands,
    )
    return {
      "detection": {"names": len(dn), "landmarks": len(dl)},
      "evaluation": {"names": len(en), "landmarks": len(el)},
      "known_landmarks": f"{len(self.known)}/{len(locos.LANDMARKS)}",
      "known_landmark_list": sorted(x[0] for x in self.known),
      "shared_entities": len(
        (set(dn) & set(en)) | ({x[1] for x in dl} & {x[1] for x in el})
      ),
    }


def run_real_track(c, workdir, track) -> dict:
  """Detection and ablation on a real model (`REAL_MODELS[track]`); metrics
  under `track/` (``{track}/skipped`` when the weights are not installed)."""
  try:
    model = REAL_MODELS[track][0](c.real)
  except lm.ModelNotAvailable as e:
    return {f"{track}/skipped": str(e)}
  run = RealTrack(c, workdir, track, model)
  run.detect()
  run.evaluation_probes()
  run.filtered_and_parametric()
  run.paper_protocol()
  return run.metrics(run.curves())
