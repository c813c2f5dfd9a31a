"""Loading the reference implementation's weights (jainris/panda, PyTorch) into
the PANDA models.

The reference names its parameters by module path
(``Chebs.0.att_conv1.lin.weight``, ...) and stores ``nn.Linear`` weights as
``[out, in]``; the models here keep ``[in, out]`` kernels, merge the gate's two
biases into one and name the sender/receiver weights by role. This module maps
one onto the other, so that a user can run the authors' trained weights in JAX,
and so that the two implementations can be compared on the same weights
(``benchmarks/panda_parity.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers.panda._models import (
  PandaGeDi,
  PandaHGNN,
  PandaHyperGCN,
  PandaPhenomNN,
)
from jaxpapers.panda._stage import PandaConfig, PandaLayer, PandaStage

__all__ = [
  "load_reference_weights",
  "reference_stage_names",
  "reference_config",
  "REFERENCE_ATTENTION_TYPES",
]


def _np(v) -> np.ndarray:
  if hasattr(v, "detach"):  # a torch tensor
    v = v.detach().cpu().numpy()
  return np.asarray(v)


class _Reader:
  """Reads ``prefix + name`` from a state dict, checks its shape, records what
  was used."""

  def __init__(self, state_dict: Mapping):
    if not isinstance(state_dict, Mapping):
      raise TypeError(
        "state_dict must be a mapping name -> array, "
        f"got {type(state_dict).__name__}"
      )
    self.sd, self.used = state_dict, set()

  def has(self, name: str) -> bool:
    return name in self.sd

  def get(self, name: str, shape: tuple) -> np.ndarray:
    if name not in self.sd:
      raise KeyError(
        f"state_dict has no entry {name!r} (the model expects shape {shape})"
      )
    v = _np(self.sd[name])
    if v.shape != tuple(shape):
      raise ValueError(
        f"state_dict[{name!r}] has shape {v.shape}, the model expects {shape}"
      )
    self.used.add(name)
    return v


def _set(param, value):
  param.set_value(jnp.asarray(value))


def reference_stage_names(
  stage: PandaStage, *, receiver_first: bool = False
) -> dict[str, tuple[str, str]]:
  """The reference's parameter names for each weight of ``stage`` (without the
  module prefix).

  Args:
    stage: the :class:`PandaStage` whose weights are named.
    receiver_first: the reference's HyperGCN stage, whose messages flow target
      to source, so its ``*_src`` weights act on the receiver and its ``*_dst``
      weights on the sender.

  Returns:
    ``{attribute: (reference name, transform)}`` where ``transform`` is ``'T'``
    (a transposed ``nn.Linear`` weight), ``'row'`` (the ``[1, H, A]`` attention
    vector), ``'vec'`` (``aux_out.weight[0]``), ``'scalar'`` or ``''``.
  """
  if not isinstance(stage, PandaStage):
    raise TypeError(f"stage must be a PandaStage, got {type(stage).__name__}")
  cfg = stage.cfg
  snd, rcv = ("dst", "src") if receiver_first else ("src", "dst")
  names = {}
  if stage.w_att_r is None:
    names["w_att"] = ("lin.weight", "T")
  else:
    names["w_att"] = (f"lin_{snd}.weight", "T")
    names["w_att_r"] = (f"lin_{rcv}.weight", "T")
  if stage.att_r is None:
    names["att"] = ("att", "row")
  else:
    names["att"] = (f"att_{snd}", "row")
    names["att_r"] = (f"att_{rcv}", "row")
  if cfg.mix == "learned":
    names["w1"] = ("att_wt_lin1.weight", "T")
    names["w2"] = ("att_wt_lin2.weight", "T")
  if cfg.aux is not None:
    names["u_s"] = (f"aux_{snd}.weight", "T")
    names["u_r"] = (f"aux_{rcv}.weight", "T")
    names["w_o"] = ("aux_out.weight", "vec")
    names["b_o"] = ("aux_out.bias", "scalar")
    if cfg.aux == "diff-mlp":
      names["w_aux"] = ("aux_lin.weight", "T")
      names["b_aux"] = ("aux_lin.bias", "")
  return names


def _load_stage(
  rd: _Reader, stage: PandaStage, prefix: str, *, receiver_first: bool = False
):
  for attr, (name, how) in reference_stage_names(
    stage, receiver_first=receiver_first
  ).items():
    p = getattr(stage, attr)
    shape = tuple(p[...].shape)
    if how == "T":
      v = rd.get(prefix + name, shape[::-1]).T
    elif how == "row":
      v = rd.get(prefix + name, (1,) + shape)[0]
    elif how == "vec":
      v = rd.get(prefix + name, (1,) + shape)[0]
    elif how == "scalar":
      v = rd.get(prefix + name, (1,))[0]
    else:
      v = rd.get(prefix + name, shape)
    _set(p, v)
  # the reference's two gate biases act as one: b = b_src + b_dst
  if stage.cfg.aux is not None:
    d = stage.cfg.aux_dim
    _set(
      stage.b_g,
      rd.get(prefix + "aux_src.bias", (d,))
      + rd.get(prefix + "aux_dst.bias", (d,)),
    )


def _load_layer(rd: _Reader, layer: PandaLayer, prefix: str):
  f, o = layer.in_features, layer.out
  _set(layer.w_u.kernel, rd.get(prefix + "lin_update.weight", (o, f)).T)
  if layer.w_res is not None:
    _set(layer.w_res.kernel, rd.get(prefix + "lin_res.weight", (o, f)).T)
    _set(layer.bias, rd.get(prefix + "bias", (o,)))
  _load_stage(rd, layer.stage1, prefix + "att_conv1.")
  _load_stage(rd, layer.stage2, prefix + "att_conv2.")


def load_reference_weights(
  model: nnx.Module, state_dict: Mapping, *, strict: bool = True
) -> set:
  """Copies the reference's (jainris/panda) PANDA weights into ``model``, in
  place.

  ``state_dict`` is the reference model's ``state_dict()`` (torch tensors or
  arrays). Supported models and the reference classes they mirror:
  :class:`PandaGeDi` (``GeDiPANDA``), :class:`PandaHGNN` (``HGNNPANDA``),
  :class:`PandaHyperGCN` (``HyperGCNPANDA``) and :class:`PandaPhenomNN`
  (``PhenomNNPANDA``), each built with the same heads, widths, depth and
  attention settings. The mapping: ``nn.Linear`` weights are transposed; the
  gate's two biases ``aux_src.bias + aux_dst.bias`` become the one bias ``b_g``
  (the same function); the reference's HyperGCN stage flows target to source, so
  its ``*_src`` weights are the receiver's here. The classifier is not loaded:
  the reference's differs by backbone (``MLP``, ``lin_out``, ``fcs[1]``) while
  the models here share :class:`jaxpapers.hypergraph.ClassifierHead`. Arrays
  keep their dtype (float64 stays float64 under ``jax_enable_x64``).

  Args:
    model: a PANDA model as above.
    state_dict: mapping from the reference's parameter names to arrays.
    strict: raise ``ValueError`` naming the propagation weights of
      ``state_dict`` that were not used (classifier weights are always skipped).

  Returns:
    The set of names read from ``state_dict``.

  Raises:
    TypeError: an unsupported model or a state dict that is not a mapping.
    KeyError, ValueError: a missing weight or one of the wrong shape (the
      message names it).
  """
  rd = _Reader(state_dict)
  skip = ("classifier.", "lin_out.", "midlayer.0.fcs.1.")
  if isinstance(model, (PandaGeDi, PandaHGNN)):
    for l, layer in enumerate(model.layers):
      _load_layer(rd, layer, f"Chebs.{l}.")
  elif isinstance(model, PandaHyperGCN):
    for l, stage in enumerate(model.stages):
      lin = model.w_u[l]
      shape = tuple(lin.kernel[...].shape)
      _set(lin.kernel, rd.get(f"layers.{l}.W", shape))
      _set(model.bias[l], rd.get(f"layers.{l}.bias", (shape[1],)))
      _load_stage(rd, stage, f"layers.{l}.", receiver_first=True)
  elif isinstance(model, PandaPhenomNN):
    pre = "midlayer.0."
    f, w = model.inp.kernel[...].shape
    _set(model.inp.kernel, rd.get(pre + "fcs.0.weight", (w, f)).T)
    _set(model.inp.bias, rd.get(pre + "fcs.0.bias", (w,)))
    for k, p in model.h.items():
      _set(p, rd.get(pre + f"convs.0.H.{k}", (w, w)))
    _load_stage(rd, model.stage1, pre + "convs.0.node_to_edge.")
    _load_stage(rd, model.stage2, pre + "convs.0.edge_to_node.")
  else:
    raise TypeError(
      "model must be a PandaGeDi, PandaHGNN, PandaHyperGCN or PandaPhenomNN, "
      f"got {type(model).__name__}"
    )
  if strict:
    extra = sorted(
      k for k in state_dict if k not in rd.used and not k.startswith(skip)
    )
    # H matrices the setting does not use (HisI)
    if isinstance(model, PandaPhenomNN):
      extra = [
        k for k in extra if ".H." not in k or k.split(".H.")[1] in model.h
      ]
    if extra:
      raise ValueError(
        f"state_dict entries not used by {type(model).__name__}: {extra[:8]}"
      )
  return rd.used


# The attention settings the reference's tuner (``common_tuning.py``) searches,
# per backbone: ``'<stage-1 types>++<stage-2 types>'``, types joined by '+'.
REFERENCE_ATTENTION_TYPES = {
  "gedi": ("gedi+gedi-att++gedi+att", "gedi-att++att"),
  "hgnn": ("gedi+gedi-att++gedi+att", "gedi-att++att"),
  "hypergcn": ("gcn+att++gcn+att", "att++att"),
  "phenomnn": ("phenom+phenom-att++phenom+att", "phenom-att++att"),
}
_PRIOR_TYPE = {
  "gedi": "gedi",
  "hgnn": "gedi",
  "hypergcn": "gcn",
  "phenomnn": ("phenom"),
}


def reference_config(
  backbone: str,
  attention_types: str,
  *,
  n_heads: int = 1,
  attention_version: str = "v2",
  distinct_att_weights: bool = False,
  aux_type: str = "diff-mlp",
  symmetric_aux: bool = False,
  **kwargs: object,
) -> PandaConfig:
  """The :class:`PandaConfig` for the reference's attention arguments.

  ``attention_types`` is the tuner's ``'<attention_type1>++<attention_type2>'``
  (one of :data:`REFERENCE_ATTENTION_TYPES` or the ``hgat`` variant):
  ``'<prior>+<X>'`` in both stages is the learned prior/attention mixture
  (``mix='learned'``), ``'<X>'`` alone attention only (``mix='att'``); a stage-1
  ``X`` of ``gedi-att`` / ``phenom-att`` reads the prior aggregation
  (``stage1_receivers='prior'``), ``hgat`` the previous layer's hyperedge states
  (``'previous'``); stage 2's ``X`` is ``att`` (HyperGCN has one stage: its
  string repeats). ``kwargs`` are accepted for the other reference arguments and
  ignored.

  Args:
    backbone: ``'gedi'``, ``'hgnn'``, ``'hypergcn'`` or ``'phenomnn'``.
    attention_types: the tuner's ``'<attention_type1>++<attention_type2>'``.
    n_heads: the number of heads.
    attention_version: ``'v2'`` (GATv2) or ``'v1'``.
    distinct_att_weights: separate sender and receiver attention weights.
    aux_type: the auxiliary path, ``'diff-mlp'``, ``'same-mlp'`` or None.
    symmetric_aux: the symmetric auxiliary gate.
    **kwargs: the reference's other arguments, ignored.

  Returns:
    The matching :class:`PandaConfig`.

  Raises:
    ValueError: a combination the models here do not express.
  """
  if backbone not in _PRIOR_TYPE:
    raise ValueError(
      f"backbone must be one of {sorted(_PRIOR_TYPE)}, got {backbone!r}"
    )
  del kwargs
  parts = str(attention_types).split("++")
  if len(parts) != 2:
    raise ValueError(
      f"attention_types must be '<type1>++<type2>', got {attention_types!r}"
    )
  prior = _PRIOR_TYPE[backbone]
  t1, t2 = (p.split("+") for p in parts)
  if (
    len(t1) != len(t2)
    or len(t1) not in (1, 2)
    or (len(t1) == 2 and (t1[0], t2[0]) != (prior,) * 2)
  ):
    raise ValueError(
      f"attention_types {attention_types!r}: expected '{prior}+X++{prior}+Y' "
      "or 'X++Y'"
    )
  x1, x2 = t1[-1], t2[-1]
  att1 = {
    "att": "att",
    "hgat": "previous",
    "gedi-att": "prior",
    "phenom-att": ("prior"),
  }
  if backbone == "hypergcn":
    if x1 != "att" or x2 != "att":
      raise ValueError(
        f"HyperGCN's attention type is 'att', got {attention_types!r}"
      )
    recv = "prior"
  else:
    if x1 not in ("hgat", f"{prior}-att") or x2 != "att":
      raise ValueError(
        f"attention_types {attention_types!r}: stage 1 must use '{prior}-att' "
        "or 'hgat', stage 2 'att'"
      )
    recv = att1[x1]
  return PandaConfig(
    heads=int(n_heads),
    mix="learned" if len(t1) == 2 else "att",
    att_version=attention_version,
    shared_att_weights=not distinct_att_weights,
    aux=aux_type,
    symmetric_aux=bool(symmetric_aux),
    stage1_receivers=recv,
  )
