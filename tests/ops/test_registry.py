"""The one registration point of the ops (minigrad/ops/registry.py): each declaration gives its
op its names (a minigrad.ops attribute, a Tensor method, an mg. name, as declared; none written by
hand elsewhere), the family that declares it, and `import *` leaves out Python's builtins; a name
declared twice is refused, naming both families.
"""

import builtins

import pytest

import minigrad as mg
from minigrad.engine import Tensor
from minigrad.ops import registry


def test_every_declared_op_is_an_ops_name_a_method_and_an_mg_name_as_declared():
    """One declaration (registry.op) gives the op its names: none is written by hand elsewhere."""
    for name, entry in registry.OPS.items():
        assert getattr(mg.ops, name) is entry.function, name
        assert (getattr(Tensor, name, None) is entry.function) == entry.method, name
        assert (getattr(mg, name, None) is entry.function) == entry.public, name
    assert mg.ops.cross_entropy is mg.cross_entropy is mg.nn.functional.cross_entropy


def test_the_registry_views_agree_with_the_declarations():
    assert registry.OPS["exp"].family == "unary" and registry.OPS["clip"].function is mg.clamp
    assert registry.OPS["margin_ranking_loss"].family == "losses.margin"
    assert set(registry.methods()) == {n for n, e in registry.OPS.items() if e.method}
    assert "cat" in registry.public_names() and "cat" not in registry.methods()
    assert "view_as" in registry.methods() and "view_as" not in registry.public_names()
    exported = registry.exported()
    assert "exp" in exported and not {"sum", "abs", "round", "max"} & set(exported)
    assert all(not hasattr(builtins, name) for name in exported)
    families = registry.families()
    assert sorted(n for names in families.values() for n in names) == sorted(registry.OPS)


def test_a_name_declared_twice_is_refused_naming_both_families():
    with pytest.raises(RuntimeError, match=r"'exp' is declared twice: in ops.unary and in ops\."):
        registry.op(lambda x: x, name="exp")
    assert registry.OPS["exp"].function is mg.exp
