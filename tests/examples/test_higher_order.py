"""examples/higher_order.py: each step's numbers against what they must be by hand or by finite
differences."""

import importlib.util
import pathlib

import numpy as np

PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "higher_order.py"
spec = importlib.util.spec_from_file_location("higher_order_example", PATH)
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


def test_newton_finds_the_minimum_of_x4_minus_2x2():
    assert abs(example.newton() - 1.0) < 1e-12


def test_the_hessian_vector_product_matches_finite_differences():
    hvp, numeric = example.hessian_vector_product()
    np.testing.assert_allclose(hvp, numeric, rtol=1e-6, atol=1e-8)


def test_the_maml_meta_gradient_is_the_one_worked_out_by_hand():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(1,))
    support, query = rng.normal(size=(10, 1)), rng.normal(size=(10, 1))
    a_s, a_q = np.mean(support**2), np.mean(query**2)
    adapted = w - 0.1 * 2 * a_s * (w - 3)
    expected = 2 * a_q * (adapted - 3) * (1 - 0.2 * a_s)
    np.testing.assert_allclose(example.maml_step(), expected, rtol=1e-12)


def test_the_gradient_penalty_step_gives_a_finite_loss():
    assert np.isfinite(example.gradient_penalty_step())
