"""Offline NoLiMa-style probes and the synthetic toy task."""

import numpy as np
import pytest

from jaxpapers import lm, locos
from tests import resources


def test_toy_trials_and_batches_are_consistent():
  task = locos.ToyTask(
    num_names=6, num_landmarks=6, num_fillers=4, prompt_len=16, max_needles=2
  )
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
    # answer (or city), then <eos>
    assert len(nxt) == 2 and nxt[-1] == tok.eos_id


def test_probe_needle_span_covers_the_needle():
  resources.require(resources.smollm2_missing())
  cfg, _, tok = lm.load_smollm2()
  # RMSNorm eps: SmolLM2-135M's published config (rms_norm_eps = 1e-5), stored
  # as float32
  assert cfg.norm_eps == pytest.approx(1e-5, rel=1e-6)
  rng = np.random.default_rng(0)
  for kind in ("nonliteral", "literal"):
    for t in locos.make_probes(
      rng, tokenizer=tok, num=3, kind=kind, filler_sentences=2
    ):
      s, e = t.needle_span
      text = tok.decode(t.prompt_ids[s:e])
      assert any(
        text.strip() == r.format(name=t.answer, landmark=land)
        for r in locos.RELATIONS
        for land, _ in locos.LANDMARKS
      ), text
      assert tok.decode(t.prompt_ids).startswith("<|im_start|>system")
  # disjoint entity halves, every relation template, no system message
  (na, la), (nb, lb) = locos.split_entities(0)
  assert not set(na) & set(nb) and not {c for _, c in la} & {c for _, c in lb}
  assert len(na) + len(nb) == len(locos.NAMES) and len(la) + len(lb) == len(
    locos.LANDMARKS
  )
  probes = locos.make_probes(
    rng,
    tokenizer=tok,
    num=12,
    kind="nonliteral",
    names=nb,
    landmarks=lb,
    system_prompt=False,
  )
  for t in probes:
    text = tok.decode(t.prompt_ids)
    assert text.startswith("<|im_start|>user") and t.answer in nb
    needle = tok.decode(t.prompt_ids[slice(*t.needle_span)]).strip()
    land = next(x for x, _ in lb if x in needle)
    assert needle in {
      r.format(name=t.answer, landmark=land) for r in locos.RELATIONS
    }
    assert not any(c in text for _, c in la if c not in {c2 for _, c2 in lb})
  (p,) = locos.make_probes(rng, tokenizer=tok, num=1, kind="parametric")
  assert p.needle_span == (0, 0) and p.answer in dict(locos.LANDMARKS).values()


def test_bucket_indices_groups_by_smallest_holding_bucket():
  got = locos.bucket_indices([5, 17, 16, 40, 1], (16, 48, 32))
  assert got == [(16, [0, 2, 4]), (32, [1]), (48, [3])]
  assert locos.bucket_indices([3, 9], None) == [(9, [0, 1])]
  assert locos.bucket_indices([3, 9], 12) == [(12, [0, 1])]


class _WordTokenizer:
  """Whitespace tokens with character offsets; BOS (id 1) added by default, like
  Gemma's."""

  add_bos_default = True
  bos_id = 1

  def __init__(self):
    self.words = {}

  def encode_with_offsets(self, text):
    import re

    spans = [m.span() for m in re.finditer(r"\S+", text)]
    ids = [
      self.words.setdefault(text[a:b], len(self.words) + 2) for a, b in spans
    ]
    return ids, spans

  def decode(self, ids):
    inv = {v: k for k, v in self.words.items()}
    return " ".join(inv[i] for i in ids if i != self.bos_id)


def test_probes_start_with_bos_and_keep_the_needle_span_when_the_tokenizer_adds_it():
  tok = _WordTokenizer()
  for t in locos.make_probes(
    np.random.default_rng(0),
    tokenizer=tok,
    num=4,
    kind="nonliteral",
    system_prompt=False,
  ):
    assert t.prompt_ids[0] == tok.bos_id and tok.bos_id not in t.prompt_ids[1:]
    s, e = t.needle_span
    needle = tok.decode(t.prompt_ids[s:e])
    assert (
      t.answer in needle and needle.endswith(".") and "Question:" not in needle
    )


def b_stem(trial, tok):
  """The stem's words at the end of a stemmed probe's text (from its question
  template)."""
  text = tok.decode(trial.prompt_ids)
  for _, stem in locos.QUESTIONS["nonliteral"]:
    for _, city in locos.LANDMARKS:
      words = stem.format(city=city).split()
      if text.split()[-len(words) :] == words:
        return words
  raise AssertionError("no stem at the end of the probe")


def test_solved_examples_leave_the_items_alone_and_never_name_a_probe_entity():
  tok = _WordTokenizer()
  kw = dict(
    tokenizer=tok,
    num=6,
    kind="nonliteral",
    filler_sentences=1,
    system_prompt=False,
  )
  plain = locos.make_probes(np.random.default_rng(3), **kw)
  for fmt in locos.PROMPT_FORMATS:
    for stem in (True, False):
      shot = locos.make_probes(
        np.random.default_rng(3),
        prompt_format=fmt,
        shots=2,
        answer_prefix=stem,
        **kw,
      )
      for a, b in zip(plain, shot):
        assert a.answer == b.answer
        text = tok.decode(b.prompt_ids)
        # the probe's needle is the last needle: after both solved examples
        needle = tok.decode(b.prompt_ids[slice(*b.needle_span)])
        assert needle == tok.decode(a.prompt_ids[slice(*a.needle_span)])
        assert text.rindex(needle) > max(
          text.rfind(n) for n in locos.SHOT_NAMES
        )
        # two solved examples, each answered with one of the examples' names
        sep = "Answer:" if fmt == "completion" else "assistant"
        answers = [
          x.replace("<|im_end|>", " ").split() for x in text.split(sep)[1:]
        ]
        assert len(answers) == 3
        names = {f"{n}." for n in locos.SHOT_NAMES}
        for ans in answers[:2]:
          if stem:
            assert ans[0] == "The" and ans[ans.index("is") + 1] in names
          else:
            assert ans[0] in names
        # the probe ends with its stem (or with the assistant turn / "Answer:")
        assert answers[2] == ([*b_stem(a, tok)] if stem else [])
        if fmt == "completion":
          assert "<|im_start|>" not in text
  # the example pools share no name, landmark or city with the probes' pools
  assert not set(locos.SHOT_NAMES) & set(locos.NAMES)
  assert not {x for p in locos.SHOT_LANDMARKS for x in p} & {
    x for p in locos.LANDMARKS for x in p
  }


def test_more_probes_from_the_same_generator_keep_the_first_items():
  # a run with more evaluation items reuses the cells of a run with fewer: its
  # first items (prompts with their solved examples, needle spans, answers) must
  # be the same
  tok = _WordTokenizer()
  kw = dict(
    tokenizer=tok,
    kind="nonliteral",
    system_prompt=False,
    prompt_format=("completion"),
  )
  for stem in (True, False):
    few = locos.make_probes(
      np.random.default_rng([0, 2]), num=5, shots=2, answer_prefix=stem, **kw
    )
    more = locos.make_probes(
      np.random.default_rng([0, 2]), num=9, shots=2, answer_prefix=stem, **kw
    )
    assert [(t.prompt_ids, t.needle_span, t.answer) for t in more[:5]] == [
      (t.prompt_ids, t.needle_span, t.answer) for t in few
    ]
    assert len({tuple(t.prompt_ids) for t in more}) == 9
