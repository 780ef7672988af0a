"""Spec step 4, second part: the impulse solver.

It takes rows of any kind as a boxed linear complementarity problem: row i has the velocity
v_i = J_i u_{t+1}, the impulse lambda_i in [lo_i, hi_i] and a target velocity t_i, with

    lambda_i strictly inside its box  ->  v_i = t_i
    lambda_i = lo_i                   ->  v_i >= t_i
    lambda_i = hi_i                   ->  v_i <= t_i

A position limit (restitution 0) is t = 0 with a one-sided box, a velocity limit t = +-v_max with a
one-sided box, Coulomb joint friction with stiction t = 0 with the box +-(tau_c,joint + tau_c,out)
dt.
Contacts are blocks of three rows with a friction cone (see contact_solver.py). Each block is solved
exactly given the others, and the blocks are iterated (block Gauss-Seidel) until no impulse changes
a row's velocity by more than `tolerance`.

The response of the system to the impulses, `response` = A^-1 J^T, is the caller's: M~^-1 J^T for
a tree, M_c^-1 J^T when loop and mimic constraints are eliminated before the solver.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from raisimcli.jit import kernel
from raisimcli.linalg import _skipping_mm
from raisimcli.physics.step.contact_solver import SCALAR, block_gauss_seidel

DEFAULT_MAX_ITERATIONS = 200
DEFAULT_TOLERANCE = 1e-12  # m/s or rad/s of row velocity


class WarmStart(Mapping):
    """The impulses of a step by row key, for the next step's warm start: the rows' keys in row
    order and their impulses, read as a dict (made on the first read by key: World.get_state, or
    a step whose rows differ). A step whose rows have the same keys in the same order takes the
    impulses as they are, without a lookup per key."""

    def __init__(self, keys: list, impulses: np.ndarray, parts: tuple = ()):
        self._keys, self._impulses = keys, impulses
        self._dict: dict | None = None
        self._parts = parts  # the WarmStarts of the islands it was made of (of_parts)
        self._first: dict | None = None  # _part_of_first_key

    @classmethod
    def of_parts(cls, parts: list["WarmStart"]) -> "WarmStart":
        """The impulses of several islands' rows, one island after the other (joined when
        first read as a whole); an island whose rows are those of the last step takes its
        impulses as they are."""
        return cls(None, None, tuple(parts))

    @property
    def keys_list(self) -> list:
        if self._keys is None:
            self._keys = [key for part in self._parts for key in part.keys_list]
        return self._keys

    @property
    def impulses(self) -> np.ndarray:
        if self._impulses is None:
            self._impulses = np.concatenate([part.impulses for part in self._parts])
        return self._impulses

    def _part_of_first_key(self) -> dict:
        """Each part (with rows) by its first row's key (a key is in one part only)."""
        if self._first is None:
            self._first = {part.keys_list[0]: part for part in self._parts if part.keys_list}
        return self._first

    def _by_key(self) -> dict:
        if self._dict is None:
            self._dict = dict(zip(self.keys_list, self.impulses.tolist()))
        return self._dict

    def __getitem__(self, key):
        return self._by_key()[key]

    def __iter__(self):
        return iter(self._by_key())

    def __len__(self) -> int:
        return len(self._by_key())

    def __bool__(self) -> bool:
        if self._keys is None:
            return any(self._parts)
        return bool(self._keys)

    def start(self, keys: list) -> np.ndarray:
        """The warm start of rows with these keys (0 for a key not in the last step)."""
        if self._parts and keys:  # the rows of one island as they were: its part's impulses
            part = self._part_of_first_key().get(keys[0])
            if part is not None and keys == part.keys_list:
                return part.impulses.copy()
        if keys == self.keys_list:
            return self.impulses.copy()
        get = self._by_key().get
        return np.array([get(key, 0.0) for key in keys], dtype=np.float64)


def warm_start_impulses(warm_start: Mapping | None, keys: list) -> np.ndarray | None:
    """The starting impulses of rows with these keys from the last step's impulses by key (a
    WarmStart, or a dict of them from World.set_state); 0 for a key not in it, None when there
    is no warm start or no row."""
    if not warm_start or not keys:
        return None
    if isinstance(warm_start, WarmStart):
        return warm_start.start(keys)
    get = warm_start.get
    return np.array([get(key, 0.0) for key in keys], dtype=np.float64)


@dataclass
class Rows:
    """m stacked rows of J_c. `J`: (m, nv); `target`, `lo`, `hi`: (m,); `source`: (m,) labels of
    the torque-table row each belongs to ("joint_limits", "joint_friction", "contacts"); `key`:
    (m,) identities used to warm-start from the previous step. Rows come in blocks:
    `block_start`, `block_kind` (SCALAR: one box row; CONTACT: three rows t1, t2, n of a contact,
    whose `lo`/`hi` are unused) and `block_mu` (the contact's friction coefficient); None: every
    row is a scalar block. `groups`: source_groups(), when whoever makes the rows knows them."""

    J: np.ndarray
    target: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    source: list = field(default_factory=list)
    key: list = field(default_factory=list)
    block_start: np.ndarray | None = None
    block_kind: np.ndarray | None = None
    block_mu: np.ndarray | None = None
    # source_groups, when the maker knows them (else made on the first call and kept)
    groups: tuple | None = field(default=None, repr=False, compare=False)
    # source_groups_with_contacts of these rows, by number of contacts (kept once made)
    _with_contacts: dict = field(default_factory=dict, repr=False, compare=False)

    def source_groups(self) -> tuple[list, np.ndarray, np.ndarray]:
        """(sources, order, starts): the distinct sources in the order of their first row, and
        the rows of source k, order[starts[k]:starts[k + 1]], in row order (kept once made)."""
        if self.groups is None:
            selections: dict[str, list] = {}
            for i, src in enumerate(self.source):
                selections.setdefault(src, []).append(i)
            starts = [0]
            for sel in selections.values():
                starts.append(starts[-1] + len(sel))
            self.groups = (list(selections),
                           np.array([i for sel in selections.values() for i in sel],
                                    dtype=np.int64),
                           np.array(starts, dtype=np.int64))
        return self.groups

    def source_groups_with_contacts(self, nc: int) -> tuple[list, np.ndarray, np.ndarray]:
        """source_groups of these rows followed by the rows of nc contacts (one more group,
        "contacts", the last 3 nc rows), kept with these rows (the joint rows of a joint state
        are reused from step to step). Read them, never write them."""
        if not nc:
            return self.source_groups()
        groups = self._with_contacts.get(nc)
        if groups is None:
            sources, order, starts = self.source_groups()
            m0, m = self.m, self.m + 3 * nc
            all_order = np.empty(m, dtype=np.int64)
            all_starts = np.empty(len(starts) + 1, dtype=np.int64)
            all_order[:m0], all_order[m0:] = order, np.arange(m0, m)
            all_starts[:-1], all_starts[-1] = starts, m
            groups = self._with_contacts[nc] = (sources + ["contacts"], all_order, all_starts)
        return groups

    @property
    def m(self) -> int:
        return self.J.shape[0]

    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(block_start, block_kind, block_mu); rows without blocks get one scalar block each,
        made on the first call and kept (the rows of a joint state are reused from step to
        step)."""
        if self.block_start is None:
            m = self.m
            self.block_start = np.arange(m, dtype=np.int64)
            self.block_kind = np.full(m, SCALAR, dtype=np.int64)
            self.block_mu = np.zeros(m)
        return self.block_start, self.block_kind, self.block_mu

    @classmethod
    def stack(cls, parts: list["Rows"]) -> "Rows":
        """Rows of several groups (same number of columns) one after the other."""
        parts = [p for p in parts if p.m]
        if not parts:
            return cls.empty(0)
        if len(parts) == 1:
            return parts[0]
        starts, kinds, mus = [], [], []
        r = 0
        for p in parts:
            bs, bk, bm = p.blocks()
            starts.append(bs + r)
            kinds.append(bk)
            mus.append(bm)
            r += p.m
        return cls(np.vstack([p.J for p in parts]), np.concatenate([p.target for p in parts]),
                   np.concatenate([p.lo for p in parts]), np.concatenate([p.hi for p in parts]),
                   sum((p.source for p in parts), []), sum((p.key for p in parts), []),
                   np.concatenate(starts).astype(np.int64), np.concatenate(kinds).astype(np.int64),
                   np.concatenate(mus))

    @classmethod
    def empty(cls, nv: int) -> "Rows":
        """No rows over nv columns: one record per nv, shared (it has nothing to write)."""
        return _empty_rows(nv)


@dataclass
class SolverResult:
    impulse: np.ndarray      # lambda_c, (m,)
    u_next: np.ndarray       # u_{t+1} = u* + response lambda_c, (nv,)
    iterations: int
    residual: float          # the largest velocity change of the last sweep


@kernel
def _solve(J, response, u_star, lam, target, lo, hi, start, kind, mu, max_iterations, tolerance,
           G2, v, scratch, u_next):
    """G = J response, v = J u* + G lam, the block Gauss-Seidel, u_next = u* + response lam:
    every product summed in index order (linalg.matmul's). G2 (2 m, m): scratch for G and its
    transpose (block_gauss_seidel's Gc). `mu` None when no row is a contact's (then compiled
    without the contacts' solve).

    The sums skip the terms whose factor J[i, p] or lam[p] is exactly 0 (a joint row has one
    nonzero entry): the bits are those of the full sums, because every sum starts at +0.0 and
    so is never -0.0, and x + (+-0.0) is x for any x but -0.0 (the skipped terms are +-0.0
    while `response` and u* are finite). Returns (sweeps, residual)."""
    m, N = J.shape
    G, Gc = G2[0:m], G2[m:2 * m]
    _skipping_mm(J, response, G)  # G[i, j] = sum_p J[i, p] response[p, j] in p order
    for i in range(m):
        a = 0.0
        for p in range(N):
            if J[i, p] != 0.0:
                a += J[i, p] * u_star[p]
        c = 0.0
        for p in range(m):
            c += G[i, p] * lam[p]
        v[i] = a + c
    for i in range(m):  # G's columns as rows, for the sweeps' updates of v (same values)
        for j in range(m):
            Gc[j, i] = G[i, j]
    sweeps, residual = block_gauss_seidel(G, Gc, v, lam, target, lo, hi, start, kind, mu,
                                          max_iterations, tolerance, scratch)
    for i in range(N):  # u_star + response lam, the sum in p order, the i's side by side
        u_next[i] = 0.0
    for p in range(m):
        a = lam[p]
        if a != 0.0:
            for i in range(N):
                u_next[i] += response[i, p] * a
    for i in range(N):
        u_next[i] = u_star[i] + u_next[i]
    return sweeps, residual


@kernel
def _impulses_by_source(J, lam, order, starts, col0, out, nonzero):
    """out[s] = J[rows of s]^T lam[rows of s] over the columns col0, col0 + 1, ... (as many as
    out has), the rows of source s being order[starts[s]:starts[s + 1]], summed in that order;
    nonzero[s] = 1 if any entry of out[s] is not 0, else 0."""
    for src in range(out.shape[0]):
        nonzero[src] = 0
        for c in range(out.shape[1]):
            acc = 0.0
            for p in range(starts[src], starts[src + 1]):
                i = order[p]
                acc += J[i, col0 + c] * lam[i]
            out[src, c] = acc
            if acc != 0.0:
                nonzero[src] = 1


def solve_impulses(rows: Rows, u_star: np.ndarray, response: np.ndarray,
                   impulse0: np.ndarray | None = None,
                   max_iterations: int = DEFAULT_MAX_ITERATIONS,
                   tolerance: float = DEFAULT_TOLERANCE) -> SolverResult:
    """Solve the rows for their impulses; `response` is (nv, m), A^-1 J^T. The Delassus matrix
    G = J response of the rows, their velocities at the start v = J u* + G lambda_0, and the
    sweeps run in one compiled call."""
    m = rows.m
    if m == 0:
        return SolverResult(np.zeros(0), u_star.copy(), 0, 0.0)
    lam = np.zeros(m) if impulse0 is None else np.array(impulse0, dtype=np.float64)
    start, kind, mu = rows.blocks()
    f = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
    u_next = np.empty(u_star.shape[0])
    iterations, residual = _solve(
        f(rows.J), f(response), f(u_star), lam, f(rows.target), f(rows.lo), f(rows.hi), start,
        kind, f(mu), int(max_iterations), float(tolerance), np.empty((2 * m, m)), np.empty(m),
        np.empty((5, 3)), u_next)
    return SolverResult(lam, u_next, int(iterations), float(residual))


@functools.lru_cache(maxsize=64)
def _empty_rows(nv: int) -> Rows:
    z = np.zeros(0)
    return Rows(np.zeros((0, nv)), z, z, z, [], [])
