"""CLDR units, rendering and pool construction (host side)."""

import numpy as np
import pytest

import jaxpapers.mlaire as M

LANGS = ("en", "de", "fr")


@pytest.fixture(scope="module")
def corpus():
  units = M.cldr_units(LANGS)
  cur = [u for u in units if u.fact == "currency"][:12]
  lan = [u for u in units if u.fact == "official_language"][:12]
  return units, M.render_passages(cur + lan, LANGS, seed=0)


def test_cldr_units_name_known_facts(corpus):
  units, _ = corpus
  assert len(units) > 400
  by = {(u.fact, u.territory): u for u in units}
  fr = by[("currency", "FR")]
  assert fr.value == "EUR" and fr.names["de"][0] == "Frankreich"
  br = by[("official_language", "BR")]
  assert br.value == "pt" and br.names["fr"][1] == "portugais"


def test_render_gives_parallel_versions(corpus):
  _, c = corpus
  n_l = len(LANGS)
  assert len(c.passages) == len(c.units) * n_l == len(c.queries)
  np.testing.assert_array_equal(c.lang[:6], [0, 1, 2, 0, 1, 2])
  np.testing.assert_array_equal(c.content[:6], [0, 0, 0, 1, 1, 1])
  u = c.units[0]
  for l, lang in enumerate(LANGS):
    assert (
      u.names[lang][0] in c.passages[l] and u.names[lang][1] in c.passages[l]
    )
    assert u.names[lang][0] in c.queries[l]
  # The same paraphrase in every language of a unit (translations of each
  # other).
  first = [
    c.passages[i].startswith(("The official", "Die offizielle", "La monnaie"))
    for i in range(3)
  ]
  assert len(set(first)) == 1


@pytest.mark.parametrize("variant", ["A", "B", "C"])
def test_pool_composition(corpus, variant):
  _, c = corpus
  n_l = len(LANGS)
  p = M.build_pools(
    c, variant=variant, n_hard=3, n_easy=4, n_trap=2, p_max=24, seed=1
  )
  assert p.doc.shape == (len(c.units) * n_l, 24)
  for i in range(p.doc.shape[0]):
    d = p.doc[i, p.mask[i]]
    assert len(set(d)) == d.size  # no duplicate passage
    sem = c.content[d] == p.q_content[i]
    lm = c.lang[d] == p.q_lang[i]
    assert (sem & lm).sum() == (0 if variant == "B" else 1)
    assert (sem & ~lm).sum() == n_l - 1
    same_fact = c.fact[c.content[d]] == c.fact[p.q_content[i]]
    hard = same_fact & ~sem
    assert hard.sum() == 3 * n_l + (2 if variant == "C" else 0)
    assert (hard & lm).sum() == 3 + (2 if variant == "C" else 0)
    assert (~same_fact).sum() == 4
    np.testing.assert_array_equal(p.doc_lang[i, p.mask[i]], c.lang[d])
  again = M.build_pools(
    c, variant=variant, n_hard=3, n_easy=4, n_trap=2, p_max=24, seed=1
  )
  np.testing.assert_array_equal(again.doc, p.doc)
  other = M.build_pools(
    c, variant=variant, n_hard=3, n_easy=4, n_trap=2, p_max=24, seed=2
  )
  assert not np.array_equal(other.doc, p.doc)


def test_shared_surface_fraction_counts_identical_names():
  u1 = M.Unit(
    "currency", "BR", "BRL", {"en": ("Brazil", "x"), "de": ("Brasilien", "x")}
  )
  u2 = M.Unit(
    "currency", "PE", "PEN", {"en": ("Peru", "x"), "de": ("Peru", "x")}
  )
  c = M.render_passages([u1, u2], ("en", "de"))
  assert M.shared_surface_fraction(c) == 0.5


def test_sample_units_keeps_per_fact_in_order():
  units = [
    M.Unit(f, f"{f[0]}{i}", "v", {"en": ("x", "v")})
    for i in range(5)
    for f in M.FACT_TYPES
  ]
  kept = M.sample_units(units, 3, seed=0)
  assert [u.fact for u in kept] == ["currency"] * 3 + ["official_language"] * 3
  for fact in M.FACT_TYPES:
    pos = [units.index(u) for u in kept if u.fact == fact]
    # distinct, in the given order
    assert pos == sorted(pos) and len(set(pos)) == 3
  assert M.sample_units(units, 3, seed=0) == kept  # seeded
  # all 5 of each type when fewer
  assert len(M.sample_units(units, 9, seed=0)) == 10


def test_trivial_scores_order_the_pool_as_their_names_say(corpus):
  _, c = corpus
  p = M.build_pools(
    c, variant="A", n_hard=3, n_easy=4, n_trap=2, p_max=24, seed=1
  )
  s = M.trivial_scores(p, np.random.default_rng(0))
  # The same draws in the same order, in float64 NumPy.
  rng = np.random.default_rng(0)
  r, n1, n2 = (rng.random(p.doc.shape) for _ in range(3))
  sem = p.doc_content == p.q_content[:, None]
  lang = p.doc_lang == p.q_lang[:, None]
  np.testing.assert_allclose(s["random"], r, rtol=1e-6)
  np.testing.assert_allclose(s["lang_only"], lang + 0.5 * n1, rtol=1e-6)
  np.testing.assert_allclose(s["blind_oracle"], sem + 0.5 * n2, rtol=1e-6)
  # Every same-content passage outscores every other one under the blind oracle.
  lo = np.where(sem & p.mask, s["blind_oracle"], np.inf).min(1)
  hi = np.where(~sem & p.mask, s["blind_oracle"], -np.inf).max(1)
  assert np.all(lo > hi)
