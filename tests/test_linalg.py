"""raisimcli.linalg, the fixed-order algebra of the step, against numpy/LAPACK (a second
implementation) and against identities."""

import math

import numpy as np
import pytest

from conftest import assert_close
from raisimcli.linalg import Cholesky, _cho_solve, congruence, dot, independent_rows, matmul, norm


@pytest.mark.parametrize("shape", [((4, 3), (3, 5)), ((1, 7), (7, 1)), ((6, 0), (0, 2)),
                                   ((5, 5), (5,)), ((3,), (3, 4)), ((9,), (9,))])
def test_matmul_matches_numpy(rng, shape):
    A = rng.standard_normal(shape[0])
    B = rng.standard_normal(shape[1])
    expected = A @ B
    got = matmul(A, B)
    assert np.shape(got) == np.shape(expected)
    assert_close(got, expected, rtol=1e-13, atol=1e-13, what="A @ B")


def test_matmul_takes_views_and_rejects_mismatched_shapes(rng):
    A = rng.standard_normal((6, 4))
    assert_close(matmul(A.T, A[:, :2]), A.T @ A[:, :2], rtol=1e-13, atol=1e-13, what="views")
    with pytest.raises(ValueError, match="do not match"):
        matmul(A, A)


def test_dot_and_norm_sum_in_index_order():
    # 1 + 1e-16 + ... loses the small terms one by one when summed from the left; pairwise or
    # blocked summation would keep some of them
    a = np.array([1.0] + [1e-16] * 8)
    assert dot(a, np.ones(9)) == 1.0
    assert norm([3.0, 4.0]) == 5.0


def test_congruence(rng):
    T, M = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    assert_close(congruence(T, M), T @ M @ T.T, rtol=1e-12, atol=1e-12, what="T M T^T")


def test_cholesky_solves_like_lapack(rng):
    X = rng.standard_normal((8, 8))
    A = X @ X.T + 8 * np.eye(8)
    c = Cholesky(A)
    assert c.info == 0
    assert_close(c.L @ c.L.T, A, rtol=1e-13, atol=1e-13, what="L L^T")
    assert_close(c.L, np.linalg.cholesky(A), rtol=1e-12, atol=1e-13, what="L")
    b, B = rng.standard_normal(8), rng.standard_normal((8, 3))
    assert_close(A @ c.solve(b), b, rtol=1e-12, atol=1e-12, what="A A^-1 b")
    assert_close(c.solve(B), np.linalg.solve(A, B), rtol=1e-11, atol=1e-12, what="A^-1 B")


def test_cholesky_solves_a_column_block_of_rows_into_a_larger_matrix(rng):
    """solve_rows_into (the impulse response of one system among several) writes
    A^-1 B[:, cols]^T into its rows of X, leaves the other rows alone, and agrees with LAPACK."""
    for n, k, col0, row0, width in ((6, 5, 0, 0, 6), (6, 7, 4, 4, 13), (5, 3, 2, 7, 9),
                                    (13, 9, 0, 0, 13), (18, 26, 1, 2, 20)):
        X0 = rng.standard_normal((n, n))
        A = X0 @ X0.T + n * np.eye(n)
        B = rng.standard_normal((k, width))
        X = np.full((max(width, row0 + n), k), 7.0)
        c = Cholesky(A)
        c.solve_rows_into(B, col0, X, row0)
        block = B[:, col0:col0 + n]
        assert_close(A @ X[row0:row0 + n], block.T, rtol=1e-12, atol=1e-12, what="A X = B^T")
        assert_close(X[row0:row0 + n], np.linalg.solve(A, block.T), rtol=1e-11, atol=1e-12,
                     what="vs LAPACK")
        # the columns solved side by side: the bits of the column-by-column substitution
        one_by_one = np.empty((n, k))
        _cho_solve(c.L, np.ascontiguousarray(block.T), one_by_one)
        assert np.array_equal(X[row0:row0 + n], one_by_one)
        assert np.array_equal(c.solve(np.ascontiguousarray(block.T)), one_by_one)
        others = np.ones(X.shape[0], dtype=bool)
        others[row0:row0 + n] = False
        assert np.all(X[others] == 7.0)


def test_the_solve_of_joint_rows_from_their_first_dof_has_the_bits_of_the_whole_solve(rng):
    """_cho_solve_rows' `first`: for rows of +0.0 with one 1.0 each (joint rows, after a floating
    base's six DoFs), the forward pass from the first DoF any row touches gives the bits of
    the column-by-column substitution from row 0 (_cho_solve)."""
    from raisimcli.linalg import _cho_solve_rows
    for n, first, k in ((18, 6, 12), (18, 6, 1), (12, 0, 5), (9, 8, 1), (30, 6, 24)):
        X0 = rng.standard_normal((n, n))
        L = np.linalg.cholesky(X0 @ X0.T + n * np.eye(n))
        B = np.zeros((k, n))
        idx = rng.integers(first, n, size=k)
        idx[0] = first
        B[np.arange(k), idx] = 1.0
        skipped, whole = np.empty((n, k)), np.empty((n, k))
        _cho_solve_rows(L, B, 0, skipped, 0, first)
        _cho_solve(L, np.ascontiguousarray(B.T), whole)
        assert skipped.tobytes() == whole.tobytes()


def test_cholesky_reports_the_first_non_positive_pivot():
    A = np.diag([1.0, 2.0, -1.0, 4.0])
    assert Cholesky(A).info == 3
    assert Cholesky(np.zeros((2, 2))).info == 1


def test_independent_rows_drop_dependent_ones(rng):
    J = rng.standard_normal((3, 6))
    J = np.vstack([J, J[0] + 2 * J[2], J[1]])  # rows 3 and 4 depend on the others
    D = J @ J.T
    kept = independent_rows(D, 1e-10 * np.max(np.diag(D)))
    assert len(kept) == 3
    assert np.linalg.matrix_rank(J[kept]) == 3
    full = J[:3] @ J[:3].T
    assert list(independent_rows(full, 1e-10 * np.max(np.diag(full)))) == [0, 1, 2]
    assert len(independent_rows(np.zeros((2, 2)), 0.0)) == 0


@pytest.mark.parametrize("robot", ["quadruped.urdf", "spherical_chain.urdf", "arm7.urdf"])
def test_the_block_transforms_give_the_bits_of_the_dense_products_with_T(rng, robot):
    """The velocity transform T applied as 3x3 blocks (raisimcli.physics.conventions) against
    the dense products with T: the same nonzero terms in the same order, so the same bits."""
    from conftest import robot as path
    from raisimcli.model import load_urdf
    from raisimcli.physics.conventions import (Conventions, GetterScratch, _getter_coordinates,
                                               _getter_inputs, _getter_mass, _getter_rotated,
                                               _mass_matrix)
    model = load_urdf(path(robot))
    conv = Conventions(model)
    for _ in range(5):
        q = model.neutral_configuration()
        q = q + 0.3 * rng.standard_normal(q.size)
        q = conv.normalize(q)
        T = conv.velocity_transform(q)
        R = conv.rotations(q)
        upper = np.triu(rng.standard_normal((model.nv, model.nv)))
        M_pin = np.triu(upper) + np.triu(upper, 1).T
        u = rng.standard_normal(model.nv)
        J = rng.standard_normal((3, model.nv))
        h_pin = rng.standard_normal(model.nv)
        got_pin, got = np.empty_like(M_pin), np.empty_like(M_pin)  # (the steps' _mass_matrix)
        _mass_matrix(upper, conv.block_u, R, got_pin, got)
        assert got_pin.tobytes() == M_pin.tobytes()
        assert np.array_equal(got, congruence(T, M_pin))
        assert np.array_equal(conv.to_pin_velocity(R, u), matmul(T.T, u))
        assert np.array_equal(conv.from_pin_columns(R, J), matmul(J, T.T))
        u_pin = matmul(T.T, u)
        expected_h = matmul(T, h_pin + matmul(M_pin, conv.bias_correction(u_pin)))
        assert np.array_equal(conv.nonlinearities(R, h_pin, M_pin, u_pin), expected_h)
        a = rng.standard_normal(model.nv)  # Pinocchio's acceleration d/dt (T^T u)
        assert np.array_equal(conv.pin_acceleration(R, a, u_pin),
                              matmul(T.T, a) + conv.bias_correction(u_pin))
        if conv.identity:
            assert R.shape == (0, 3, 3) and np.array_equal(got, M_pin)
        # the getters' calls (get_mass_matrix, get_nonlinearities) over their arrays made once
        q_to_pin = rng.permutation(model.nq)  # (any order of the coordinates)
        gs = GetterScratch(conv, q_to_pin)
        _getter_inputs(q, u, gs.table)
        assert np.array_equal(gs.q_pin, q[q_to_pin])
        assert np.array_equal(gs.u_pin, u_pin)
        assert np.array_equal(gs.c, conv.bias_correction(u_pin))
        # get_mass_matrix's: its own arrays, which only _getter_coordinates has written
        gm = GetterScratch(conv, q_to_pin)
        _getter_coordinates(q, gm.table)
        assert np.array_equal(gm.q_pin, q[q_to_pin])
        M = upper.copy()  # (in place)
        _getter_mass(M, gm.table)
        assert gm.M_pin.tobytes() == M_pin.tobytes()
        assert np.array_equal(M, congruence(T, M_pin))
        h = h_pin.copy()
        _getter_rotated(h, gs.table)
        assert np.array_equal(h, matmul(T, h_pin))


def test_normalize_gives_the_bits_of_q_over_its_norm(rng):
    """Conventions.normalize divides each quaternion by linalg.norm in Python floats: the same
    bits as q / norm(q) with numpy, for quaternions of any scale; a zero one is refused."""
    from conftest import robot as path
    from raisimcli.errors import StateError
    from raisimcli.model import load_urdf
    from raisimcli.physics.conventions import Conventions
    model = load_urdf(path("spherical_chain.urdf"))
    conv = Conventions(model)
    starts = [qs for _, qs in conv.spherical]
    assert starts
    for scale in (1.0, 1e-150, 1e150, 3.7):
        for _ in range(200):
            q = rng.standard_normal(model.nq) * scale
            got = conv.normalize(q)
            for qs in starts:
                quat = q[qs:qs + 4]
                assert got[qs:qs + 4].tobytes() == (quat / norm(quat)).tobytes()
    q = rng.standard_normal(model.nq)
    q[starts[0]:starts[0] + 4] = 0.0
    with pytest.raises(StateError, match="is zero: no orientation"):
        conv.normalize(q)


def test_first_beyond_finds_the_first_entry_that_is_not_finite_or_too_large():
    from raisimcli.linalg import FLOAT_MAX, first_beyond
    assert first_beyond(np.array([0.0, -1e300, 5.0, FLOAT_MAX, -FLOAT_MAX]), FLOAT_MAX) == -1
    for bad in (math.inf, -math.inf, math.nan):
        assert first_beyond(np.array([1.0, bad, bad]), FLOAT_MAX) == 1
    assert first_beyond(np.array([1.0, -3.0, 2.0]), 2.5) == 1
    assert first_beyond(np.zeros(0), 1.0) == -1


def test_quadratic_form_has_the_bits_of_dot_of_matmul():
    # the kinetic energy's x^T A x in one compiled call: the same sums in the same order
    from raisimcli.linalg import quadratic_form
    rng = np.random.default_rng(4)
    for n in (1, 7, 18):
        A, x = rng.standard_normal((n, n)), rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8)
        assert np.float64(quadratic_form(A, x)).tobytes() == \
            np.float64(dot(x, matmul(A, x))).tobytes()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_jacobi_run_in_python_gives_the_compiled_loop_s_bits(rng, n):
    """symmetric_eigen runs _jacobi's lines in Python (py_func) for a URDF's 3 x 3 tensors: the
    same IEEE operations in the same order as the compiled loop (no fastmath, no fused
    multiply-add), so the same eigenvalues, eigenvectors and rotated matrix to the bit; both
    agree with LAPACK's eigenvalues."""
    from raisimcli.linalg import _jacobi, symmetric_eigen
    cases = [rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-9, 3) for _ in range(300)]
    cases += [np.zeros((n, n)), np.eye(n), np.diag(np.arange(1.0, n + 1)),
              np.full((n, n), 0.3) + np.diag(np.full(n, 1e-17))]  # (repeated eigenvalues)
    for A in cases:
        S = 0.5 * (A + A.T)
        got = []
        for jacobi in (_jacobi, _jacobi.py_func):
            a, w, V = S.copy(), np.empty(n), np.empty((n, n))
            jacobi(a, w, V)
            got.append((a.tobytes(), w.tobytes(), V.tobytes()))
        assert got[0] == got[1]
        w, V = symmetric_eigen(S)
        scale = max(np.abs(S).max(), 1e-300)
        assert_close(w, np.linalg.eigvalsh(S), rtol=0, atol=1e-13 * scale)
        assert_close(V @ np.diag(w) @ V.T, S, rtol=0, atol=1e-13 * scale)


def test_only_a_mass_matrix_that_may_be_singular_goes_to_the_jacobi_rotations(rng):
    """The load's singularity test (1e-14 times the largest eigenvalue, on the Jacobi rotations'
    eigenvalues) is reached only when LAPACK's smallest eigenvalue is not clearly above it (1e-8
    times the largest): a matrix in between goes to the rotations, which find it regular."""
    from raisimcli.linalg import symmetric_eigen
    from raisimcli.model.pinocchio_model import _may_be_singular
    Q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    for smallest, may, singular in [(1e-6, False, False), (1e-9, True, False),
                                    (1e-16, True, True), (0.0, True, True)]:
        w = np.concatenate([[smallest], np.linspace(0.5, 2.0, 11)])
        M = Q @ np.diag(w) @ Q.T
        M = 0.5 * (M + M.T)
        assert _may_be_singular(M) is may
        if may:
            w_jacobi = symmetric_eigen(M)[0]
            assert (not w_jacobi[0] > 1e-14 * w_jacobi[-1]) is singular
