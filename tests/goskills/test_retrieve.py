"""Groups (roles), group graph (eq. 7), the end-to-end GoSkills pipeline and the
baselines, against the pure-Python reference in ``reference.py``; batching,
sharding, recompilation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxpapers.goskills as S
from jaxpapers.goskills._retrieve import _retrieve
from tests.goskills import reference as ref
from tests.goskills.conftest import edges_of

# the smoke experiment's config: one compiled program for both
CFG = S.GoSkillsConfig()


@pytest.fixture(scope="module")
def world(small_world):
  lib, tasks, scores = small_world
  g = lib.graph
  arr = dict(
    edges=edges_of(g),
    kind=np.asarray(g.kind),
    req=np.asarray(g.req),
  )
  return lib, tasks, scores, arr, S.goskills_retrieve


def test_build_groups_matches_reference(world):
  lib, tasks, scores, arr, _ = world
  for i in range(4):
    order = sorted(range(lib.n), key=lambda s: (-scores[i, s], s))[:8]
    for start in ("root", "anchor"):
      got = S.build_groups(
        lib.graph, np.array(order), tasks.visible[i], scores[i], start=start
      )
      for j, x in enumerate(order):
        want = ref.group(
          x,
          lib.n,
          arr["edges"],
          arr["kind"],
          arr["req"],
          tasks.visible[i],
          scores[i],
          start=start,
        )
        assert np.asarray(got.members[j]).tolist() == want, (i, x, start)
  # Every filled slot carries its slot's role (default counts: 1 START, 4
  # SUPPORT, 2 CHECK, 2 AVOID); a flagged (decoy) anchor's group holds AVOID
  # members only.
  roles, members = np.asarray(got.roles), np.asarray(got.members)
  slots = [S.START] + [S.SUPPORT] * 4 + [S.CHECK] * 2 + [S.AVOID] * 2
  np.testing.assert_array_equal(roles, np.where(members >= 0, slots, -1))
  assert (roles[:, 0] == S.START).any()


def test_root_start_is_upstream_of_anchor():
  # Chain 0 -> 1 -> 2 (dependency); the anchor is the goal step 2.
  g = S.skill_graph(
    [0, 1], [1, 2], [0, 0], np.zeros((3, 1), bool), [0, 0, 0], [9, 9, 9]
  )
  root = S.build_groups(
    g, np.array([2]), np.zeros(1, bool), start="root", max_check=0, max_avoid=0
  )
  anchor = S.build_groups(
    g,
    np.array([2]),
    np.zeros(1, bool),
    start="anchor",
    max_check=0,
    max_avoid=0,
  )
  # SUPPORT: anchor, nearest
  assert np.asarray(root.members).tolist() == [[0, 2, 1, -1, -1]]
  assert np.asarray(anchor.members).tolist() == [[2, 1, 0, -1, -1]]


def test_flagged_anchor_is_avoided_and_not_started():
  # 0 -> 1 dependency; decoy 2 is an alternative of 1, note 3 flags 2; validator
  # 4 checks 1.
  src, dst, typ = [0, 2, 3, 4], [1, 1, 2, 1], [0, 3, 5, 4]
  req = np.zeros((5, 2), bool)
  req[1, 0] = req[2, 0] = req[4, 0] = True
  g = S.skill_graph(src, dst, typ, req, [0, 0, 0, 2, 1], [9] * 5)
  grp = S.build_groups(g, np.array([2, 1]), np.array([True, False]))
  m = np.asarray(grp.members)
  # decoy anchor: only AVOID
  assert m[0].tolist() == [-1, -1, -1, -1, -1, -1, -1, 2, -1]
  assert m[1].tolist() == [0, 1, -1, -1, -1, 4, -1, 2, -1]
  no_avoid = S.build_groups(
    g, np.array([2, 1]), np.array([True, False]), use_avoid=False
  )
  # without AVOID the decoy starts its own group
  assert np.asarray(no_avoid.members)[0, 0] == 2


def test_group_graph_matches_loops(world):
  lib, tasks, scores, arr, _ = world
  # 8 anchors: the program compiled above
  order = np.argsort(-scores[0], kind="stable")[:8]
  grp = S.build_groups(lib.graph, order, tasks.visible[0], scores[0])
  w = np.asarray(S.transition_weights(lib.graph))
  got = np.asarray(S.group_graph(grp, w))
  m, r = np.asarray(grp.members), np.asarray(grp.roles)
  want = np.zeros((8, 8))
  for a in range(8):
    for b in range(8):
      if a != b:
        for sa, ra in zip(m[a], r[a]):
          for sb, rb in zip(m[b], r[b]):
            if sa >= 0 and sb >= 0 and ra != S.AVOID and rb != S.AVOID:
              want[a, b] += w[sa, sb]
  np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("variant", ["full", "no_graph", "no_avoid"])
def test_goskills_matches_reference_pipeline(world, variant):
  lib, tasks, scores, arr, run = world
  cfg = {
    "full": CFG,
    "no_graph": S.GoSkillsConfig(use_group_graph=False),
    "no_avoid": S.GoSkillsConfig(use_avoid=False),
  }[variant]
  contract, plan = run(lib.graph, scores, tasks.visible, cfg)
  ids, roles, avoid, plan = map(
    np.asarray, (contract.ids, contract.roles, contract.avoid, plan)
  )
  for i in range(scores.shape[0]):
    w_ids, w_roles, w_avoid, w_plan = ref.goskills(
      lib.n,
      arr["edges"],
      arr["kind"],
      arr["req"],
      tasks.visible[i],
      scores[i],
      budget=cfg.budget,
      use_graph=cfg.use_group_graph,
      use_avoid=cfg.use_avoid,
    )
    assert plan[i].tolist() == w_plan, i
    assert ids[i].tolist() == w_ids, i
    assert roles[i].tolist() == w_roles, i
    assert sorted(a for a in avoid[i] if a >= 0) == sorted(w_avoid), i
    # Contract invariants: one START, unique ids, nothing both selected and
    # avoided.
    sel = ids[i][ids[i] >= 0]
    assert (roles[i] == S.START).sum() <= 1 and len(set(sel)) == len(sel)
    assert not set(sel) & set(avoid[i][avoid[i] >= 0])


def test_second_call_and_ablation_do_not_recompile(world):
  lib, tasks, scores, _, run = world
  run(lib.graph, scores, tasks.visible, CFG)
  n0 = _retrieve._cache_size()
  run(lib.graph, scores + 0.0, tasks.visible, S.GoSkillsConfig(use_avoid=False))
  # neither a second call nor an ablation recompiles
  assert _retrieve._cache_size() == n0


# two more compilations of the whole pipeline (one task; 8-device sharding)
@pytest.mark.slow
def test_batched_equals_single_and_sharded_equals_single_device(world):
  lib, tasks, scores, _, run = world
  batched, _ = run(lib.graph, scores, tasks.visible, CFG)
  one, _ = S.goskills_retrieve(lib.graph, scores[3], tasks.visible[3], CFG)
  np.testing.assert_array_equal(np.asarray(one.ids), np.asarray(batched.ids[3]))
  mesh = jax.make_mesh(
    (jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,)
  )
  t = scores.shape[0] - scores.shape[0] % jax.device_count() or scores.shape[0]
  sh = NamedSharding(mesh, P("data"))
  sc = jax.device_put(jnp.asarray(scores[:t]), sh)
  vis = jax.device_put(jnp.asarray(tasks.visible[:t]), sh)
  sharded, _ = run(lib.graph, sc, vis, CFG)
  np.testing.assert_array_equal(
    np.asarray(sharded.ids), np.asarray(batched.ids[:t])
  )


def test_flat_and_gos_bundle_match_numpy(world):
  lib, _, scores, arr, _ = world
  flat = np.asarray(S.flat_topk(scores, 5).ids)
  for i in range(scores.shape[0]):
    assert (
      flat[i].tolist()
      == sorted(range(lib.n), key=lambda s: (-scores[i, s], s))[:5]
    )
  t = S.transition_matrix(lib.graph)
  bundle = S.gos_bundle(t, scores, seeds=3, budget=5)
  t64 = ref.transition(lib.n, arr["edges"])
  for i in range(3):
    top = sorted(range(lib.n), key=lambda s: (-scores[i, s], s))[:3]
    p = np.zeros(lib.n)
    p[top] = 1.0 / np.arange(1, 4)
    pi = ref.ppr(t64, p)
    want = np.argsort(-pi, kind="stable")[:5]
    got = np.asarray(bundle.ids[i])
    # same scores (ties may swap)
    np.testing.assert_allclose(pi[got], pi[want], atol=1e-6)
  assert (np.asarray(bundle.roles) == -1).all() and bundle.avoid.shape == (
    scores.shape[0],
    0,
  )
  trunc = S.flat_topk(scores, 5).truncate(3)
  np.testing.assert_array_equal(np.asarray(trunc.ids), flat[:, :3])
