"""Long-context needle probes (`locos.make_needle_probes`): length budget,
needle span, depth, a haystack that never names the question's entities."""

import re

import numpy as np
import pytest

from jaxpapers import lm, locos
from tests import resources


class CharTokenizer:
  """One token per character (an independent, exact length and offset
  reference)."""

  bos_id = None
  add_bos_default = False

  def encode(self, text, *, add_bos=None):
    return [ord(c) % 256 for c in text]

  def encode_with_offsets(self, text):
    return self.encode(text), [(i, i + 1) for i in range(len(text))]

  def apply_chat_template(self, messages):
    return f"<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\n{messages[0]['content']}"


def _haystack_and_question(text):
  body = text.split("<|im_start|>user\n", 1)[1]
  return body.split("\n\nQuestion: ", 1)


@pytest.mark.parametrize("kind", ["nonliteral", "literal"])
def test_needle_probes_fill_the_budget_and_place_the_needle(kind):
  tok = CharTokenizer()
  T = 3000
  depths = (0.0, 0.25, 0.5, 0.75, 1.0)
  probes = locos.make_needle_probes(
    np.random.default_rng(0),
    tokenizer=tok,
    num=10,
    context_tokens=T,
    kind=kind,
    depths=depths,
  )
  city_of = dict(locos.LANDMARKS)
  for i, p in enumerate(probes):
    n = len(p.prompt_ids)
    # within one haystack sentence (<= 200 characters) of the budget
    assert T - 200 < n <= T
    text = "".join(chr(c) for c in p.prompt_ids)
    s, e = p.needle_span
    needle = text[s:e]
    land = next(x for x in city_of if f"the {x}." in needle)
    assert needle in {
      r.format(name=p.answer, landmark=land) for r in locos.RELATIONS
    }
    hay, question = _haystack_and_question(text)
    assert needle in hay
    # depth: the needle sits after about depth * (haystack length) characters
    assert abs(hay.index(needle) / len(hay) - depths[i % len(depths)]) < 0.1
    # the haystack names neither the answer, nor the landmark, nor its city
    # (beyond the needle)
    rest = hay.replace(needle, " ")
    for w in (p.answer, land, city_of[land]):
      assert not re.search(rf"\b{re.escape(w)}\b", rest, re.I), w
    if kind == "nonliteral":
      assert city_of[land] in question and land not in question
    else:
      assert land in question
    # answer stem
    assert text.startswith("<|im_start|>user") and text.endswith(" is")


def test_needle_probes_differ_by_seed_and_reject_tiny_budgets():
  tok = CharTokenizer()
  a = locos.make_needle_probes(
    np.random.default_rng(1), tokenizer=tok, num=3, context_tokens=800
  )
  b = locos.make_needle_probes(
    np.random.default_rng(2), tokenizer=tok, num=3, context_tokens=800
  )
  assert [p.prompt_ids for p in a] != [p.prompt_ids for p in b]
  with pytest.raises(
    ValueError, match=("too small for the needle and the question")
  ):
    locos.make_needle_probes(
      np.random.default_rng(0), tokenizer=tok, num=1, context_tokens=64
    )


def test_needle_probes_with_the_smollm2_tokenizer_at_4k():
  resources.require(resources.smollm2_missing())
  _, _, tok = lm.load_smollm2()
  probes = locos.make_needle_probes(
    np.random.default_rng(0),
    tokenizer=tok,
    num=2,
    context_tokens=4096,
    depths=(0.5,),
  )
  for p in probes:
    assert 4096 - 80 < len(p.prompt_ids) <= 4096
    s, e = p.needle_span
    assert p.answer in tok.decode(p.prompt_ids[s:e])
    assert 0.4 < s / len(p.prompt_ids) < 0.6


@pytest.mark.slow
def test_needle_experiment_runs_at_4k_tokens(tmp_path):
  """configs/needle.py shrunk to one 4k-token probe per split: detection,
  mean-query ablation and results.json (minutes on a CPU: prefill of 4k tokens
  through 30 layers)."""
  resources.require(resources.smollm2_missing())
  from experiments.locos import train
  from experiments.locos.configs import needle

  c = needle.get_config()
  c.needle.context_tokens = (4096,)
  c.needle.num_detect = c.needle.num_eval = 1
  c.needle.detectors, c.needle.ks = ("locos",), (5,)
  c.needle.max_steps, c.needle.batch_size = 2, 1
  m = train.train_and_evaluate(c, str(tmp_path))
  rec = m["needle/T=4096"]
  assert rec["padded_to"] == 4096 and 3900 < rec["prompt_tokens"][0] <= 4096
  assert set(rec["rougeL"]) == {"baseline@0", "locos@5"}
  assert (tmp_path / "results.json").exists()
