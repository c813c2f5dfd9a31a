"""Hypergraph data structures, loaders, operators and the vanilla backbones.

Used by :mod:`jaxpapers.panda` (PANDA, NeurIPS 2026; builds on GeDi-HNN, Fiorini et al.,
TMLR 2024). Conventions: complex incidence ``H_ve = 1`` on heads / undirected members and
``H_ve = exp(+2 pi i q)`` (``i`` for q = 1/4) on tails (``phase_convention='code'``; ``'dshn'``
is the conjugate); degrees count incidences; ``num_edges`` is explicit.
"""

from jaxpapers.hypergraph._io import (DATASETS, RestrictedUnpickler, load, load_cocitation,
                                      load_gedi_synthetic, load_heterophilous, load_mail,
                                      load_planetoid, load_telegram, random_splits,
                                      safe_load_pickle)
from jaxpapers.hypergraph._models import (BACKBONES, ClassifierHead, GeDiHNN, HGNN, HyperGCN,
                                          PhenomNN, complex_unit_mul)
from jaxpapers.hypergraph._ops import (cmul, complex_relu, edge_to_node, gedi_operator,
                                       gedi_propagate, graph_propagate, hgnn_operator,
                                       hgnn_propagate, hypergcn_graph, inv_sqrt, node_to_edge,
                                       phenom_operators, phenom_propagate, segment_softmax)
from jaxpapers.hypergraph._structure import (HypergraphData, Incidence, add_self_loop_hyperedges,
                                             as_undirected, from_directed_edges,
                                             from_directed_hyperedges, from_hyperedges,
                                             from_incidence_pairs, make_data, pad_incidence)
from jaxpapers.hypergraph._synthetic import make_synthetic

__all__ = [
    "DATASETS", "RestrictedUnpickler", "load", "load_cocitation", "load_gedi_synthetic",
    "load_heterophilous", "load_mail", "load_planetoid", "load_telegram", "random_splits",
    "safe_load_pickle", "BACKBONES", "ClassifierHead", "GeDiHNN", "HGNN", "HyperGCN", "PhenomNN",
    "complex_unit_mul", "cmul", "complex_relu", "edge_to_node", "gedi_operator", "gedi_propagate",
    "graph_propagate", "hgnn_operator", "hgnn_propagate", "hypergcn_graph", "inv_sqrt",
    "node_to_edge", "phenom_operators", "phenom_propagate", "segment_softmax", "HypergraphData",
    "Incidence", "add_self_loop_hyperedges", "as_undirected", "from_directed_edges",
    "from_directed_hyperedges", "from_hyperedges", "from_incidence_pairs", "make_data",
    "pad_incidence", "make_synthetic",
]
