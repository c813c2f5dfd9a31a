"""check_array's rank and shape checks are chex's static assertions, with the
argument named."""

import chex
import jax
import numpy as np
import pytest

from jaxpapers import core


@pytest.fixture
def chex_disabled():
  chex.disable_asserts()
  try:
    yield
  finally:
    chex.enable_asserts()


def test_rank_and_shape_errors_name_the_argument_under_jit():
  f = jax.jit(lambda x: core.check_array(x, "logits", ndim=(2, 3)))
  with pytest.raises(
    ValueError,
    match=(r"logits must have rank one of \(2, 3\), got shape \(4,\)"),
  ):
    f(np.zeros(4, np.float32))
  g = jax.jit(lambda x: core.check_array(x, "tokens", shape=(2, None)))
  assert g(np.zeros((2, 5), np.int32)).shape == (2, 5)
  with pytest.raises(
    ValueError, match=(r"tokens must have shape \(2, \?\), got \(3, 5\)")
  ):
    g(np.zeros((3, 5), np.int32))
  with pytest.raises(
    ValueError, match=(r"tokens must have shape \(2, \?\), got \(2, 5, 1\)")
  ):
    g(np.zeros((2, 5, 1), np.int32))


def test_the_chex_error_is_the_cause():
  with pytest.raises(ValueError) as info:
    core.check_array(np.zeros(3), "x", ndim=2)
  assert isinstance(info.value.__cause__, AssertionError)
  assert "[Chex]" in str(info.value.__cause__)


def test_disabling_chex_asserts_turns_the_shape_checks_off(chex_disabled):
  # The checks are chex's, so chex's global switch applies to them; the dtype
  # check is not.
  assert core.check_array(np.zeros(3), "x", ndim=2).shape == (3,)
  assert core.check_array(np.zeros(3), "x", shape=(4,)).shape == (3,)
  with pytest.raises(TypeError, match="x must have a integer dtype"):
    core.check_array(np.zeros(3, np.float32), "x", dtype="int")
