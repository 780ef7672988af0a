"""Small dense linear algebra with a fixed order of operations: the same bits on every x86-64.

numpy's `@`, `np.dot`, `np.linalg` and scipy's LAPACK wrappers go through OpenBLAS, which picks its
kernels at run time from the processor (Haswell, SkylakeX, Zen, ...). Kernels sum in different
orders, so a product or a Cholesky factor can differ in the last bit between two machines, and a
contact set that hinges on that bit changes a whole trajectory. Every product, norm and
factorisation whose result reaches a log goes through the functions below instead: compiled loops
(numba, no fastmath, so no reassociation and no fused multiply-add) that sum in index order. The
matrices of a step are small (nv <= a few dozen), where these loops cost no more than a BLAS call.

Every function takes and returns float64 numpy arrays; inputs are not modified.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from raisimcli.jit import kernel


@kernel
def _mm(A, B, out):
    """out = A B (out apart from A and B), each entry summed in p order from 0.0. B's rows are
    streamed, each one's products added to a row of out: the loops' order changes no entry's
    sequence of operations, and reads B along its rows."""
    n, k = A.shape
    m = B.shape[1]
    for i in range(n):
        for j in range(m):
            out[i, j] = 0.0
        for p in range(k):
            a = A[i, p]
            for j in range(m):
                out[i, j] += a * B[p, j]


@kernel
def _skipping_mm(A, B, out):
    """out = A B as _mm sums it (each entry in p order from +0.0), without the terms whose
    A[i, p] is 0: the same bits when B is finite (a skipped term is +-0.0, and a sum that
    starts at +0.0 is never -0.0, so adding +-0.0 leaves it as it is). A's rows are often
    sparse in the step (a joint's row of J: one nonzero entry)."""
    n, k = A.shape
    m = B.shape[1]
    for i in range(n):
        for j in range(m):
            out[i, j] = 0.0
        for p in range(k):
            a = A[i, p]
            if a != 0.0:
                for j in range(m):
                    out[i, j] += a * B[p, j]


@kernel
def _mv(A, x, out):
    n, k = A.shape
    for i in range(n):
        s = 0.0
        for p in range(k):
            s += A[i, p] * x[p]
        out[i] = s


FLOAT_MAX = sys.float_info.max  # first_beyond's limit for "not finite"


@kernel
def first_beyond(v, limit) -> int:
    """The first index of the vector v whose entry is not finite or beyond +-limit; -1 if none
    (limit = FLOAT_MAX: the first entry that is not finite; with limit = inf an infinite entry
    would pass)."""
    for i in range(v.shape[0]):
        x = v[i]
        if not (abs(x) <= limit):  # NaN fails every comparison
            return i
    return -1


@kernel
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@kernel
def _cholesky(A, L):
    """Lower Cholesky factor of A into L; returns 0, or j + 1 if the j-th pivot is not > 0
    (LAPACK dpotrf's info)."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for p in range(j):
            s -= L[j, p] * L[j, p]
        if not s > 0.0:
            return j + 1
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            t = A[i, j]
            for p in range(j):
                t -= L[i, p] * L[j, p]
            L[i, j] = t / d
    return 0


@kernel
def _cho_solve(L, B, X):
    """X = (L L^T)^-1 B for B (n, k): forward then backward substitution, column by column."""
    n, k = B.shape
    for c in range(k):
        for i in range(n):
            s = B[i, c]
            for p in range(i):
                s -= L[i, p] * X[p, c]
            X[i, c] = s / L[i, i]
        for i in range(n - 1, -1, -1):
            s = X[i, c]
            for p in range(i + 1, n):
                s -= L[p, i] * X[p, c]
            X[i, c] = s / L[i, i]


@kernel
def _cho_solve_rows(L, B, col0, X, row0, first):
    """X[row0 + i, c] = ((L L^T)^-1 B[c, col0 : col0 + n])[i] for every row c of B: the solution
    of B's column block transposed, read from B's rows (no transposed copy). Each column c goes
    through _cho_solve's operations in its order; the loop over the columns is the innermost
    (the columns are independent), so that the columns' chains run side by side.

    `first` (0 for any B): B's entries before column col0 + first are +0.0 in every row, and
    no entry of B is -0.0 (a joint's row of J, one 1.0 among np.zeros' +0.0, after a floating
    base's six). The forward pass then starts at row `first` with the bits of the full pass:
    the rows before it stay +0.0 there (0.0 - (+-0.0) and 0.0 / L[i, i] are +0.0), and
    subtracting their products (+-0.0) from a later row's entry changes nothing, since that
    entry starts as B's, not -0.0, and a subtraction never makes -0.0 from it."""
    n, k = L.shape[0], B.shape[0]
    for i in range(n):
        for c in range(k):
            X[row0 + i, c] = B[c, col0 + i]
    for i in range(first, n):  # forward: s = b_i - sum_p<i L[i, p] x_p, in p order, / L[i, i]
        for p in range(first, i):
            a = L[i, p]
            for c in range(k):
                X[row0 + i, c] -= a * X[row0 + p, c]
        d = L[i, i]
        for c in range(k):
            X[row0 + i, c] = X[row0 + i, c] / d
    for i in range(n - 1, -1, -1):  # backward: s = y_i - sum_p>i L[p, i] x_p, in p order
        for p in range(i + 1, n):
            a = L[p, i]
            for c in range(k):
                X[row0 + i, c] -= a * X[row0 + p, c]
        d = L[i, i]
        for c in range(k):
            X[row0 + i, c] = X[row0 + i, c] / d


@kernel
def _pivoted_rank(A, tol, perm):
    """Outer-product Cholesky of the symmetric A (overwritten) with diagonal pivoting (LAPACK
    dpstrf's rule: the largest remaining diagonal entry, the first one on a tie; stop when it
    is <= tol). Writes the pivot order into perm and returns the rank."""
    n = A.shape[0]
    for i in range(n):
        perm[i] = i
    for k in range(n):
        p = k
        best = A[k, k]
        for i in range(k + 1, n):
            if A[i, i] > best:
                best = A[i, i]
                p = i
        if not best > tol:
            return k
        if p != k:
            for c in range(n):
                t = A[k, c]
                A[k, c] = A[p, c]
                A[p, c] = t
            for r in range(n):
                t = A[r, k]
                A[r, k] = A[r, p]
                A[r, p] = t
            t2 = perm[k]
            perm[k] = perm[p]
            perm[p] = t2
        d = math.sqrt(A[k, k])
        A[k, k] = d
        for i in range(k + 1, n):
            A[i, k] /= d
        for j in range(k + 1, n):
            for i in range(k + 1, n):
                A[i, j] -= A[i, k] * A[j, k]
    return n


@kernel
def _jacobi(A, w, V):
    """Eigen-decomposition of the symmetric A (overwritten) by cyclic Jacobi rotations
    (Numerical Recipes' `jacobi`): eigenvalues into w, eigenvectors into the columns of V."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            V[i, j] = 1.0 if i == j else 0.0
    for sweep in range(100):
        off = 0.0
        for p in range(n - 1):
            for q in range(p + 1, n):
                off += abs(A[p, q])
        if off == 0.0:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = A[p, q]
                g = 100.0 * abs(apq)
                if sweep > 3 and abs(A[p, p]) + g == abs(A[p, p]) and \
                        abs(A[q, q]) + g == abs(A[q, q]):
                    A[p, q] = 0.0
                    A[q, p] = 0.0
                    continue
                if apq == 0.0:
                    continue
                h = A[q, q] - A[p, p]
                if abs(h) + g == abs(h):
                    t = apq / h
                else:
                    theta = 0.5 * h / apq
                    t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
                    if theta < 0.0:
                        t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = t * c
                for k in range(n):  # columns p, q of A, then rows p, q
                    akp = A[k, p]
                    akq = A[k, q]
                    A[k, p] = c * akp - s * akq
                    A[k, q] = s * akp + c * akq
                for k in range(n):
                    apk = A[p, k]
                    aqk = A[q, k]
                    A[p, k] = c * apk - s * aqk
                    A[q, k] = s * apk + c * aqk
                for k in range(n):
                    vkp = V[k, p]
                    vkq = V[k, q]
                    V[k, p] = c * vkp - s * vkq
                    V[k, q] = s * vkp + c * vkq
    for i in range(n):
        w[i] = A[i, i]


# Up to this size symmetric_eigen runs _jacobi's lines in Python (its `py_func`) instead of the
# compiled loop: a URDF's 3 x 3 inertia tensors, read before any step. The same operations
# (+, -, *, /, abs, sqrt and comparisons of IEEE doubles, which the compiled loop keeps in
# order: no fastmath, no fused multiply-add) give the same bits (tests/test_linalg.py), and a
# fresh environment's first run does not wait for numba to compile the loop while it reads the
# model.
PYTHON_JACOBI_MAX = 3


def symmetric_eigen(S) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending (n,), eigenvectors as columns (n, n)) of a symmetric matrix, by
    Jacobi rotations: for the 3 x 3 tensors of a URDF, without LAPACK."""
    S = _f64(S)
    S = 0.5 * (S + S.T)
    w = np.empty(S.shape[0])
    V = np.empty_like(S)
    jacobi = _jacobi.py_func if S.shape[0] <= PYTHON_JACOBI_MAX and \
        hasattr(_jacobi, "py_func") else _jacobi  # (NUMBA_DISABLE_JIT: _jacobi is the function)
    jacobi(np.array(S, order="C"), w, V)  # a copy: _jacobi overwrites it
    order = np.argsort(w, kind="stable")
    return w[order], np.ascontiguousarray(V[:, order])


def symmetric_eigenvalues(S) -> np.ndarray:
    """Eigenvalues, ascending, of a symmetric matrix (see :func:`symmetric_eigen`)."""
    return symmetric_eigen(S)[0]


def nearest_positive_semidefinite(S) -> np.ndarray:
    """The positive semi-definite matrix nearest to the symmetric S in the Frobenius norm:
    V max(w, 0) V^T (Higham, "Computing a nearest symmetric positive semidefinite matrix",
    Linear Algebra Appl. 103, 1988)."""
    w, V = symmetric_eigen(S)
    P = matmul(V * np.maximum(w, 0.0), V.T)
    return 0.5 * (P + P.T)


def _f64(a) -> np.ndarray:
    """a as a C-contiguous, writeable float64 array (a copy only when it is not one): numba
    compiles a function once more for a read-only array."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a if a.flags.writeable else a.copy()


def matmul(A, B) -> np.ndarray:
    """A @ B for 1-D or 2-D A and B (numpy's shapes rules, without BLAS)."""
    A, B = _f64(A), _f64(B)
    if A.ndim == 1 and B.ndim == 1:
        if A.shape[0] != B.shape[0]:
            raise ValueError(f"matmul: shapes {A.shape} and {B.shape} do not match")
        return np.float64(_dot(A, B))
    if A.ndim == 1:
        return matmul(B.T, A)
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul: shapes {A.shape} and {B.shape} do not match")
    if B.ndim == 1:
        out = np.empty(A.shape[0])
        _mv(A, B, out)
        return out
    out = np.empty((A.shape[0], B.shape[1]))
    _mm(A, _f64(B), out)
    return out


@kernel
def _quadratic(A, x, scratch):
    """x . (A x): _mv into scratch, then _dot (the bits of dot(x, matmul(A, x)))."""
    _mv(A, x, scratch)
    return _dot(x, scratch)


def quadratic_form(A, x) -> float:
    """x^T A x for a square float64 A (n, n) and x (n,): dot(x, matmul(A, x)) in one compiled
    call."""
    return float(_quadratic(A, x, np.empty(x.shape[0])))


def dot(a, b) -> float:
    """a . b of two vectors, summed in index order."""
    a, b = _f64(a).reshape(-1), _f64(b).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"dot: shapes {a.shape} and {b.shape} do not match")
    return float(_dot(a, b))


def norm(a) -> float:
    """Euclidean norm of a vector: sqrt of the sum of squares in index order."""
    a = _f64(a).reshape(-1)
    return math.sqrt(_dot(a, a))


def cross(a, b) -> np.ndarray:
    """a x b for 3-vectors (np.cross costs ten times more on small arrays)."""
    a = a.tolist() if isinstance(a, np.ndarray) else a
    b = b.tolist() if isinstance(b, np.ndarray) else b
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def congruence(T: np.ndarray, M: np.ndarray) -> np.ndarray:
    """T M T^T."""
    return matmul(matmul(T, M), _f64(T).T)


class Cholesky:
    """The factorisation A = L L^T of a symmetric positive definite A (n, n). `info` is 0, or
    j + 1 when the j-th leading minor is not positive (then the factor is unusable)."""

    def __init__(self, A):
        A = _f64(A)
        self.n = A.shape[0]
        self.L = np.zeros((self.n, self.n))
        self.info = int(_cholesky(A, self.L))

    @classmethod
    def of_factor(cls, L: np.ndarray, info: int) -> "Cholesky":
        """The factorisation whose lower factor L (and info) a compiled pass has computed with
        _cholesky."""
        c = cls.__new__(cls)
        c.n, c.L, c.info = L.shape[0], L, int(info)
        return c

    def solve(self, B) -> np.ndarray:
        """A^-1 B for a (n,) vector or an (n, k) matrix: the k columns solved side by side
        (_cho_solve_rows, which gives each column the bits of _cho_solve's substitution)."""
        B = _f64(B)
        vector = B.ndim == 1
        B2 = B.reshape(self.n, -1)
        X = np.empty((self.n, B2.shape[1]))
        _cho_solve_rows(self.L, np.ascontiguousarray(B2.T), 0, X, 0, 0)
        return X.reshape(-1) if vector else X

    def solve_rows_into(self, B, col0: int, X, row0: int) -> None:
        """X[row0 : row0 + n, :] = A^-1 B[:, col0 : col0 + n]^T for B (k, >= col0 + n) and X
        (>= row0 + n, k), both C-contiguous float64: the bits of solve(B[:, col0:col0 + n].T)."""
        _cho_solve_rows(self.L, B, int(col0), X, int(row0), 0)


def independent_rows(D, tol: float) -> np.ndarray:
    """Sorted indices of an independent subset of the rows of the symmetric positive
    semi-definite D: the pivots of a diagonally pivoted Cholesky whose pivot exceeds `tol`."""
    D = _f64(D)
    perm = np.empty(D.shape[0], dtype=np.int64)
    rank = int(_pivoted_rank(np.array(D, order="C"), float(tol), perm))  # a copy: overwritten
    return np.sort(perm[:rank])


__all__ = ["Cholesky", "congruence", "cross", "dot", "independent_rows", "matmul",
           "nearest_positive_semidefinite", "norm", "symmetric_eigen", "symmetric_eigenvalues"]
