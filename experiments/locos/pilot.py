"""The prompt-form pilot (configs/gemma3_pilot.py, smollm2_pilot.py): which form to probe with."""

from __future__ import annotations

import logging
import time

import numpy as np

from experiments.locos import ablation, real
from jaxpapers import core, locos


def _form(c, params, cfg, tok, store, gen, names, landmarks, fmt, shots):
  """The answered rate of one prompt form on the pilot probes (cell `pilot/<fmt>/shots=<n>`)."""
  r, pc = c.real, c.pilot
  no_abl, no_mean = real.unablated(cfg)
  kw = real.probe_kw(r, tok, prompt_format=fmt, shots=int(shots))
  probes = locos.make_probes(
    np.random.default_rng([c.seed, 3]), num=pc.num_probes, kind="nonliteral", names=names,
    landmarks=landmarks, **kw,
  )  # fmt: skip
  t1 = time.time()
  texts = store.get_or_compute(
    f"pilot/{fmt}/shots={shots}",
    lambda _, p=probes: ablation.texts(params, cfg, tok, p, no_abl, no_mean, gen),
  )
  ok = [locos.rouge1_recall(p.answer, t) >= 0.5 for p, t in zip(probes, texts)]
  return {
    "prompt_format": fmt,
    "shots": int(shots),
    "answered": int(sum(ok)),
    "answered_rate": float(np.mean(ok)),
    "mean_prompt_tokens": float(np.mean([len(p.prompt_ids) for p in probes])),
    "examples": texts[:6],
    "time_s": time.time() - t1,
  }, ok


def run_prompt_pilot(c, workdir) -> dict:
  """Answered rate of each prompt form (`c.pilot.forms`) on non-literal probes over the
  detection half of the entities, unablated, and the form the rule fixed before the pilot
  picks: the highest answered rate (ROUGE-1 recall >= 0.5), ties to the shorter prompt."""
  r, pc = c.real, c.pilot
  t0 = time.time()
  model = real.load_or_skip(c, workdir, c.tracks[0], "pilot")
  if isinstance(model, dict):
    return model
  cfg, params, tok, label = model
  store, gen = core.CellStore(f"{workdir}/cells"), real.gen_kw(r, tok)
  (det_names, det_lands), _ = locos.split_entities(c.seed)
  _, known = real.known_landmarks(params, cfg, tok, r, store, gen)
  det_lands = tuple(x for x in det_lands if x in known)
  forms = {}
  for fmt, shots in pc.forms:
    key = f"{fmt}/shots={shots}"
    forms[key], ok = _form(c, params, cfg, tok, store, gen, det_names, det_lands, fmt, shots)
    logging.info("pilot %s: %d/%d answered", key, sum(ok), len(ok))
  chosen = max(forms, key=lambda k: (forms[k]["answered_rate"], -forms[k]["mean_prompt_tokens"]))
  metrics = {
    "pilot/model": label,
    "pilot/num_probes": pc.num_probes,
    "pilot/rule": "highest answered rate (ROUGE-1 recall >= 0.5, answer stem); ties: shorter "
    "mean prompt",
    "pilot/forms": forms,
    "pilot/chosen": chosen,
    "pilot/known_landmarks": f"{len(known)}/{len(locos.LANDMARKS)}",
    "pilot/time_s": time.time() - t0,
  }
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,  # its `report` (configs/smollm2_pilot.py) declares the table
    notes="Prompt-form pilot on detection-half entities; no ablation, no claims.",
    wall_time_s=time.time() - t0,
    issue_verdicts=False,
  )
  return metrics
