"""Gemma-3-270M on every run: greedy tokens pinned against the independent
float64 reference.

`gemma3_greedy_pins.json` holds, per prompt, the token ids of llama.cpp's
SentencePiece merge loop and six greedy tokens of the float64 NumPy forward,
both from `tests/lm/gemma_ref.py` (which shares no code with `jaxpapers.lm`),
with each step's lead of the top logit over the runner-up. The slow
`test_gemma3.py` recomputes the pins from that reference, so a stale pin fails
there; this file checks the library against them in the default suite (one load
of the weights and one short generation per prompt).
"""

import json
import pathlib

import numpy as np
import pytest

from jaxpapers import lm
from tests import resources

PINS = json.loads(
  (pathlib.Path(__file__).parent / "gemma3_greedy_pins.json").read_text()
)


@pytest.fixture(scope="module")
def gemma():
  resources.require(resources.gemma3_missing())
  return lm.load_gemma3()


@pytest.mark.parametrize("pin", PINS, ids=[p["prompt"][:24] for p in PINS])
def test_greedy_tokens_equal_the_float64_reference(gemma, pin):
  config, params, tok = gemma
  assert tok.encode(pin["prompt"]) == pin["ids"]
  g = lm.greedy_generate(
    params,
    np.array(pin["ids"]),
    config=config,
    max_new_tokens=len(pin["greedy"]),
  )
  assert int(g.num_steps[0]) == len(pin["greedy"])
  assert g.tokens[0].tolist() == pin["greedy"], tok.decode(g.tokens[0].tolist())


def test_pins_are_decided_by_clear_margins():
  """A pin is only meaningful where float32 cannot flip the argmax."""
  assert len(PINS) >= 2
  for pin in PINS:
    assert min(pin["margins"]) > 0.05, pin
