"""Offline NoLiMa-style probes and the synthetic toy task."""

import numpy as np

from jaxpapers import lm, locos
from tests import resources


def test_toy_trials_and_batches_are_consistent():
  task = locos.ToyTask(num_names=6, num_landmarks=6, num_fillers=4, prompt_len=16, max_needles=2)
  tok = task.tokenizer()
  city_of = task.city_of()
  rng = np.random.default_rng(0)
  for kind in ("literal", "nonliteral"):
    for t in locos.make_toy_trials(task, rng, 20, kind):
      assert len(t.prompt_ids) == task.prompt_len
      s, e = t.needle_span
      name, near, land = tok.decode(t.prompt_ids[s:e]).split()
      assert near == "near" and name == t.answer
      q = tok.decode(t.prompt_ids[-5:]).split()
      if kind == "literal":
        assert q == ["|", "who", "near", land, "?"]
      else:
        assert q == ["|", "who", "visited", f"C{city_of[int(land[1:])]}", "?"]
  tokens, mask = locos.toy_batch(task, rng, 16)
  assert tokens.shape == mask.shape == (16, task.seq_len)
  for row, m in zip(tokens, mask):
    nxt = row[1:][m[:-1] > 0]
    assert len(nxt) == 2 and nxt[-1] == tok.eos_id  # answer (or city), then <eos>


def test_probe_needle_span_covers_the_needle():
  resources.require(resources.smollm2_missing())
  _, _, tok = lm.load_smollm2()
  rng = np.random.default_rng(0)
  for kind in ("nonliteral", "literal"):
    for t in locos.make_probes(rng, tokenizer=tok, num=3, kind=kind, filler_sentences=2):
      s, e = t.needle_span
      text = tok.decode(t.prompt_ids[s:e])
      assert f"Actually, {t.answer} lives next to the" in text
      assert tok.decode(t.prompt_ids).startswith("<|im_start|>system")
  (p,) = locos.make_probes(rng, tokenizer=tok, num=1, kind="parametric")
  assert p.needle_span == (0, 0) and p.answer in dict(locos.LANDMARKS).values()
