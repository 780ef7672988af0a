"""URDF -> :class:`RobotModel`: reading, validation and our conventions (docs/urdf.md).

Every invalid element raises a :class:`ModelError` naming the file, the line, the element and what
was expected. The reader is our own (see README, design notes): it keeps source lines for messages,
understands RaiSim's extensions (spherical joints, capsules, rotor inertia, springs, actuators, loop
constraints) and resolves `package://` paths. urchin reads the same files in the test suite as an
independent check of the standard elements.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
from lxml import etree

from raisimcli import files
from raisimcli.errors import MAX_ERRORS, ModelError, ModelErrors, did_you_mean
from raisimcli.linalg import (
    congruence,
    cross,
    matmul,
    nearest_positive_semidefinite,
    norm,
    symmetric_eigenvalues,
)
from raisimcli.model.types import (
    JOINT_NQ,
    JOINT_NV,
    ONE_DOF_TYPES,
    Actuator,
    Geometry,
    Inertial,
    Joint,
    Link,
    LoopConstraint,
    Mimic,
    ModelWarning,
    Motor,
    RobotModel,
)
from raisimcli.model.pinocchio_model import build_pinocchio_model, singular_pose_warnings
from raisimcli.model.xml import AttributeReader, describe, parse_xml_bytes, parse_xml_file

JOINT_TYPES = ("fixed", "revolute", "continuous", "prismatic", "floating", "spherical")
ROOT_JOINT_NAME = "root"
GEOMETRY_TAGS = ("box", "sphere", "cylinder", "capsule", "mesh")
# Pinocchio's data grows faster than the square of the joint count (200 moving joints take about
# 0.7 GB, 1000 all of a 24 GB machine): bigger models are refused unless the limit is raised
DEFAULT_MAX_JOINTS = 200
# no robot link is heavier or larger than this; such a value is a typo or a unit mix-up (and it
# would swamp every relative test of the mass matrix)
# the codes of the reader's warnings (docs/urdf.md, "Warnings")
WARNING_CODES = ("zero-velocity-limit", "zero-effort-limit", "empty-position-range",
                 "inverted-position-range", "no-limit-element", "inertia-projected",
                 "inertia-triangle", "collision-dropped", "geometry-extra-shapes",
                 "mimic-on-fixed-joint", "spherical-friction", "world-mass", "massless-joint",
                 "singular-mass-matrix",
                 # a scenario's initial state (docs/scenario.md, "The initial state")
                 "initial-outside-limits", "initial-in-ground", "initial-above-ground")
MAX_MASS = 1e6          # kg
MAX_INERTIA = 1e6       # kg m^2
# an inertia tensor's smallest eigenvalue may be below zero by this fraction of the largest (CAD
# exports round the entries of tiny links); it is then projected to the nearest PSD tensor
INERTIA_MARGIN = 1e-6


def load_urdf(path: str, base: str | None = None, *, strict: bool = False,
              xacro_args: dict[str, str] | None = None,
              max_joints: int = DEFAULT_MAX_JOINTS, ignore_warnings=()) -> RobotModel:
    """Read and validate a URDF file (a `.xacro` file is expanded first, with `xacro_args`).

    `base`: None (RaiSim's rule: a root link named `world` makes a fixed base, anything else
    floating), "fixed" or "floating". `strict`: every warning (an interpretation of the file, see
    docs/urdf.md) is an error instead. `max_joints`: a model with more moving joints is refused
    before its dynamics are built. `ignore_warnings`: warning codes to drop (neither reported
    nor, with `strict`, errors)."""
    check_warning_codes(ignore_warnings)
    path = os.fspath(path)
    if path.endswith(".xacro"):
        text = expand_xacro(path, xacro_args or {})
        root = parse_xml_bytes(text.encode(), path, "URDF")
    else:
        if xacro_args:
            raise ModelError("xacro arguments were given, but the file is not a .xacro file",
                             file=path)
        root = parse_xml_file(path, "URDF")
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    return _UrdfReader(path, max_joints, ignore_warnings).read(root, text, base, strict)


def check_warning_codes(codes) -> None:
    """Every code one of WARNING_CODES, or a ModelError naming the unknown one."""
    import difflib
    for code in codes:
        if code not in WARNING_CODES:
            close = difflib.get_close_matches(code, WARNING_CODES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ModelError(f"unknown warning code {code!r}{hint} (codes: "
                             f"{', '.join(WARNING_CODES)})")


def load_urdf_string(text: str, path: str = "<string>", base: str | None = None, *,
                     strict: bool = False, max_joints: int = DEFAULT_MAX_JOINTS) -> RobotModel:
    """Like :func:`load_urdf` for URDF text; relative paths resolve against `path`'s folder."""
    root = parse_xml_bytes(text.encode(), path, "URDF")
    return _UrdfReader(path, max_joints).read(root, text, base, strict)


def visual_shapes(robot: RobotModel) -> tuple[dict[str, tuple[Geometry | None, ...]],
                                                list[ModelWarning]]:
    """Each link's `<visual>` shapes in `robot`'s URDF text, read as its `<collision>` shapes are
    (meshes found from the URDF's folder, `robot.path`), with the colour of their `<material>`
    (its own `<color rgba>`, or that of the `<robot>`'s material of its name): (link name ->
    shapes, warnings). A visual that cannot be read (a mesh not found, a bad size) is None
    there, with a warning (code `visual-dropped`): what a robot looks like never stops a
    program that can simulate it."""
    root = parse_xml_bytes(robot.urdf_text.encode(), robot.path, "URDF")
    reader = _UrdfReader(robot.path)
    warnings: list[ModelWarning] = []

    def dropped(el, message: str) -> None:
        warnings.append(ModelWarning("visual-dropped", message, robot.path, el.sourceline,
                                     describe(el)))

    def colour(mel):
        c = None if mel is None else mel.find("color")
        if c is None:
            return None
        rgba = reader.vector(c, "rgba", 4, required=True)
        if np.any((rgba < 0) | (rgba > 1)):
            raise reader.error(c, f"rgba must be 4 numbers in [0, 1], got {c.get('rgba')!r}")
        return tuple(float(x) for x in rgba)

    named = {}
    for mel in root.findall("material"):
        try:
            named[mel.get("name")] = colour(mel)
        except ModelError as e:
            dropped(mel, f"{e.detail}: the material has no colour")
    shapes: dict[str, tuple[Geometry, ...]] = {}
    for el in root.findall("link"):
        found = []
        for vel in el.findall("visual"):
            try:
                g = reader.geometry(vel)
                mel = vel.find("material")
                rgba = colour(mel)
                if rgba is None and mel is not None:
                    rgba = named.get(mel.get("name"))
            except ModelError as e:
                dropped(vel, f"{e.detail}: the <visual> is left out")
                g = None
            found.append(None if g is None else replace(g, rgba=rgba))
        shapes[el.get("name")] = tuple(found)
    warnings += [replace(w, code="visual-dropped") for w in reader.warnings]
    return shapes, warnings


def expand_xacro(path: str, args: dict[str, str]) -> str:
    """The URDF text of a xacro file, with its arguments `args` (name -> value), expanded by the
    `xacro` package (the optional extra `raisimcli[xacro]`)."""
    try:
        import xacro
    except ImportError:
        raise ModelError("reading a .xacro file needs the xacro package: "
                         "pip install 'raisimcli[xacro]' (or pip install xacro)",
                         file=path) from None
    if not os.path.isfile(path):
        raise ModelError("URDF file not found", file=path)
    import contextlib
    import io
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            doc = xacro.process_file(path, mappings=dict(args))
    except SystemExit:  # xacro exits on some errors after printing them
        raise ModelError(f"xacro could not expand the file: {captured.getvalue().strip()}",
                         file=path) from None
    except Exception as e:  # noqa: BLE001 (xacro raises many kinds, with readable messages)
        detail = str(e) or type(e).__name__
        raise ModelError(f"xacro could not expand the file: {detail}", file=path) from None
    return doc.toprettyxml(indent="  ")


class _UrdfReader(AttributeReader):
    def __init__(self, path: str, max_joints: int = DEFAULT_MAX_JOINTS, ignore_warnings=()):
        super().__init__(path)
        self.ignore = set(ignore_warnings)
        self.dir = os.path.dirname(os.path.abspath(path))
        self.warnings: list[ModelWarning] = []
        self.max_joints = max_joints
        self.files: list[str] = [os.path.abspath(path)]

    def warn(self, el, code: str, message: str) -> None:
        """Record an interpretation or a doubtful value (`code`: see docs/urdf.md, Warnings)."""
        self.warnings.append(ModelWarning(code, message, self.path,
                                          None if el is None else el.sourceline,
                                          None if el is None else describe(el)))

    # --- the document ---------------------------------------------------------------------------
    def read(self, root: etree._Element, text: str, base: str | None,
             strict: bool = False) -> RobotModel:
        if root.tag != "robot":
            raise self.error(root, "expected the root element <robot>")
        if base not in (None, "fixed", "floating"):
            raise ModelError(f"base must be 'fixed' or 'floating', got {base!r}", file=self.path)
        # the links and joints are read one by one and their errors collected, so that a file
        # with several independent mistakes shows them all at once
        errors: list[ModelError] = []
        links: dict[str, Link] = {}
        link_els: dict[str, etree._Element] = {}
        for el in root.findall("link"):
            try:
                name = self.string(el, "name")
                if name in link_els:
                    raise self.error(el, f"duplicate link name {name!r} (first at line "
                                         f"{link_els[name].sourceline})")
                link_els[name] = el
                links[name] = self.link(el)
            except ModelError as e:
                errors.append(e)
        if not link_els:
            raise self.error(root, "a robot needs at least one <link>")
        joints: list[Joint] = []
        joint_els: dict[str, etree._Element] = {}
        for el in root.findall("joint"):
            try:
                name = self.string(el, "name")
                if name in joint_els:
                    raise self.error(el, f"duplicate joint name {name!r} (first at line "
                                         f"{joint_els[name].sourceline})")
                joint_els[name] = el
                joints.append(self.joint(el, link_els))  # a link with an error still exists
            except ModelError as e:
                errors.append(e)
        if errors:
            raise errors[0] if len(errors) == 1 else ModelErrors(errors[:MAX_ERRORS])
        self.check_inertias(links, link_els)

        moving = sum(1 for j in joints if j.type != "fixed")
        if moving > self.max_joints:
            raise self.error(root, f"the model has {moving} moving joints, more than the limit "
                                   f"of {self.max_joints} (Pinocchio's data for it would take "
                                   "gigabytes); raise the limit with --max-joints if you mean it")
        ordered, root_link, base_type = self.tree(root, links, joints, joint_els, base)
        self.check_mimics(ordered, joint_els)
        model_links, bodies = self.merge_bodies(links, ordered, root_link)
        ordered, nq, nv, coord_names, dof_names = self.layout(ordered)
        actuators = self.actuators(root, {j.name: j for j in ordered})
        constraints, nominal = self.constraints(root, model_links, nq)
        name = root.get("name") or os.path.splitext(os.path.basename(self.path))[0]
        model = RobotModel(
            name=name, path=os.path.abspath(self.path), urdf_text=text, base=base_type,
            root_link=root_link, links=tuple(model_links[n] for n in links if n in model_links),
            joints=tuple(ordered), bodies=bodies, nq=nq, nv=nv,
            coordinate_names=tuple(coord_names), dof_names=tuple(dof_names),
            actuators=actuators, constraints=constraints, nominal_config=nominal)
        # the dynamics must be buildable (a joint that moves no mass is an error)
        self.warnings += singular_pose_warnings(model, build_pinocchio_model(model))
        self.warnings = [w for w in self.warnings if w.code not in self.ignore]
        if strict and self.warnings:
            first = self.warnings[0]
            more = "".join(f"\n  {w}" for w in self.warnings[1:])
            raise ModelError(f"{first.message} [{first.code}] (--strict: warnings are errors)"
                             + (f"; {len(self.warnings) - 1} more:{more}" if more else ""),
                             file=self.path, line=first.line, element=first.element)
        return replace(model, warnings=tuple(self.warnings),
                       files=tuple(dict.fromkeys(self.files)))

    # --- links ----------------------------------------------------------------------------------
    def link(self, el) -> Link:
        inertial = None
        iel = el.find("inertial")
        if iel is not None:
            inertial = self.inertial(iel)
        collisions = []
        for cel in el.findall("collision"):
            g = self.geometry(cel)
            if g is not None:
                collisions.append(g)
        return Link(name=el.get("name"), inertial=inertial, collisions=tuple(collisions),
                    line=el.sourceline)

    def inertial(self, el) -> Inertial:
        T = self.origin(el)
        mel = el.find("mass")
        if mel is None:
            raise self.error(el, "missing <mass value=...>")
        mass = self.float(mel, "value", required=True)
        if mass < 0:
            raise self.error(mel, f"mass must be >= 0, got {mass:g}")
        if mass > MAX_MASS:
            raise self.error(mel, f"mass {mass:g} kg is beyond any robot link (at most "
                                  f"{MAX_MASS:g} kg): a typo or a unit mix-up?")
        Iel = el.find("inertia")
        if Iel is None:
            raise self.error(el, "missing <inertia ixx ixy ixz iyy iyz izz>")
        ixx, ixy, ixz, iyy, iyz, izz = (self.float(Iel, a, 0.0) for a in
                                         ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        big = max(abs(x) for x in (ixx, ixy, ixz, iyy, iyz, izz))
        if big > MAX_INERTIA:
            raise self.error(Iel, f"inertia entry {big:g} kg m^2 is beyond any robot link (at "
                                  f"most {MAX_INERTIA:g}): a typo or a unit mix-up?")
        I_origin = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        R = T[:3, :3]  # checked against the whole model's scale in check_inertias
        return Inertial(mass=mass, com=T[:3, 3].copy(), inertia=congruence(R, I_origin))

    def check_inertias(self, links: dict[str, Link], link_els: dict) -> None:
        """Every inertia tensor positive semi-definite, up to rounding: a negative eigenvalue
        within INERTIA_MARGIN of the model's largest principal moment (CAD exports round the
        entries of gram-sized links) is set to zero, the nearest PSD tensor, with a warning; a
        larger one is an error. Principal moments that break the triangle inequality give a
        warning (the tensor is still PSD, so the dynamics are well defined, and Pinocchio and
        RaiSim take such files)."""
        eigs = {name: symmetric_eigenvalues(link.inertial.inertia)
                for name, link in links.items() if link.inertial is not None}
        scale = max([float(np.abs(e).max()) for e in eigs.values()] + [0.0])
        margin = INERTIA_MARGIN * scale
        for name, eig in eigs.items():
            Iel = link_els[name].find("inertial").find("inertia")
            listed = ", ".join(f"{e:.6g}" for e in eig)
            if eig[0] < -margin:
                raise self.error(Iel, f"inertia tensor is not positive semi-definite (eigenvalues "
                                      f"{listed}; a negative one is taken for rounding only down "
                                      f"to -{INERTIA_MARGIN:g} times the model's largest "
                                      f"principal moment, {scale:.6g})")
            if eig[0] < 0:
                ine = links[name].inertial
                links[name] = replace(links[name], inertial=replace(
                    ine, inertia=nearest_positive_semidefinite(ine.inertia)))
                self.warn(Iel, "inertia-projected", f"inertia tensor is not positive "
                          f"semi-definite by a rounding error (eigenvalues {listed}); its "
                          "negative eigenvalue is set to zero (the nearest PSD tensor)")
                eig = np.maximum(eig, 0.0)
            if eig[0] + eig[1] < eig[2] - 1e-9 * scale:
                self.warn(Iel, "inertia-triangle", "principal moments break the triangle "
                          f"inequality ({eig[0]:.6g} + {eig[1]:.6g} < {eig[2]:.6g}): no rigid "
                          "body has this inertia; simulated as given")

    def geometry(self, cel) -> Geometry | None:
        """The shape of a `<collision>` (or `<visual>`), or None when urdfdom would drop the
        element (no geometry, an unknown shape, an unreadable mesh scale): then a warning says
        so, as Pinocchio and RaiSim load such files with the shape left out."""
        T = self.origin(cel)
        tag = f"<{cel.tag}>"
        gel = cel.find("geometry")
        if gel is None:
            self.warn(cel, "collision-dropped", f"{tag} without <geometry>: left out")
            return None
        shapes = [c for c in gel if isinstance(c.tag, str)]
        if not shapes:
            self.warn(gel, "collision-dropped", f"<geometry> without a shape: the {tag} is "
                      "left out")
            return None
        s = shapes[0]
        if len(shapes) > 1:
            self.warn(gel, "geometry-extra-shapes", f"<geometry> holds {len(shapes)} shapes; the "
                      f"first, <{s.tag}>, is used (as urdfdom does)")
        if s.tag not in GEOMETRY_TAGS:
            self.warn(s, "collision-dropped", f"unknown geometry <{s.tag}> (expected one of "
                      f"{', '.join(f'<{t}>' for t in GEOMETRY_TAGS)}): the {tag} is left out")
            return None
        if s.tag == "box":
            size = self.vector(s, "size", 3, required=True)
            if np.any(size <= 0):
                raise self.error(s, f"box size must be > 0 in every direction, got {s.get('size')!r}")
            return Geometry("box", T, tuple(size), line=s.sourceline)
        if s.tag == "sphere":
            return Geometry("sphere", T, (self.float(s, "radius", required=True, positive=True),),
                            line=s.sourceline)
        if s.tag in ("cylinder", "capsule"):
            r = self.float(s, "radius", required=True, positive=True)
            length = self.float(s, "length", required=True, min=0.0)
            return Geometry(s.tag, T, (r, length), line=s.sourceline)
        filename = self.string(s, "filename")
        text = s.get("scale")
        if text is not None and len(text.split()) not in (1, 3):
            self.warn(s, "collision-dropped", f"mesh scale {text!r} is not 1 or 3 numbers: the "
                      f"{tag} is left out (as urdfdom does)")
            return None
        scale = self.vector(s, "scale", (1, 3), default=(1, 1, 1))
        if scale.size == 1:
            scale = np.repeat(scale, 3)
        if np.any(scale == 0):
            raise self.error(s, f"mesh scale {text!r} flattens the mesh (a zero factor)")
        mesh = self.resolve_mesh(s, filename)
        self.files.append(mesh)
        return Geometry("mesh", T, (), mesh=mesh, scale=tuple(float(x) for x in scale),
                        line=s.sourceline, uri=filename)

    def resolve_mesh(self, el, filename: str) -> str:
        """The absolute path of a mesh (see docs/urdf.md, "Mesh paths").

        `package://pkg/rest`: `rest` inside the package root of `pkg`, a folder that is the URDF's
        folder or one of its ancestors (by its name or the `<name>` of its package.xml) or sits in
        one of them, or `share/pkg` of an AMENT_PREFIX_PATH entry, or `pkg` in a
        ROS_PACKAGE_PATH entry; the URDF's folder is followed both as given and through symbolic
        links. `rest` may not leave the package. `file://` and relative paths: from the URDF's
        folder."""
        if filename.startswith("package://"):
            # "package:///pkg/..." (an empty host) is read as "package://pkg/...", as Pinocchio does
            pkg, _, rest = filename[len("package://"):].lstrip("/").partition("/")
            inside = os.path.normpath(rest)
            if pkg in ("", ".", ".."):  # a package's name, never a step out of a folder
                raise self.error(el, f"mesh path {filename!r} names no package ({pkg!r} is not "
                                     "a package name)")
            if os.path.isabs(rest) or inside == ".." or inside.startswith(".." + os.sep):
                raise self.error(el, f"mesh path {filename!r} leaves its package {pkg!r}")
            candidates = [os.path.join(root, inside) for root in self.package_roots(pkg)]
        else:
            p = filename[len("file://"):] if filename.startswith("file://") else filename
            candidates = [files.resolve(p, self.dir)]
        for c in candidates:
            if os.path.isfile(c):
                return os.path.abspath(c)
        shown = ", ".join(candidates[:4]) + (", ..." if len(candidates) > 4 else "")
        raise self.error(el, f"mesh file {filename!r} not found (looked in {shown})")

    def package_roots(self, pkg: str) -> list[str]:
        """Candidate root folders of the ROS package `pkg`, nearest first."""
        roots: list[str] = []
        starts = [self.dir]
        real = os.path.dirname(os.path.realpath(self.path))
        if real != self.dir:
            starts.append(real)
        for d in starts:
            while True:
                if os.path.basename(d) == pkg:
                    roots.append(d)
                elif _package_xml_name(d) == pkg:
                    roots.append(d)
                    self.files.append(os.path.join(d, "package.xml"))  # read, and needed again
                roots.append(os.path.join(d, pkg))
                parent = os.path.dirname(d)
                if parent == d:
                    break
                d = parent
        for entry in files.package_path("AMENT_PREFIX_PATH"):
            roots.append(os.path.join(entry, "share", pkg))
        for entry in files.package_path("ROS_PACKAGE_PATH"):
            roots.append(os.path.join(entry, pkg))
            if os.path.basename(os.path.normpath(entry)) == pkg:
                roots.append(entry)
        return list(dict.fromkeys(roots))

    # --- joints ---------------------------------------------------------------------------------
    def joint(self, el, links) -> Joint:
        """One <joint>; `links`: the names of the robot's links."""
        name = el.get("name")
        jtype = self.string(el, "type")
        if jtype == "planar":
            raise self.error(el, "joint type 'planar' is not supported; use two prismatic joints "
                                 "and a revolute joint")
        if jtype not in JOINT_TYPES:
            raise self.error(el, f"unknown joint type {jtype!r}; expected one of "
                                 f"{', '.join(JOINT_TYPES)}{did_you_mean(jtype, JOINT_TYPES)}")
        ends = {}
        for tag in ("parent", "child"):
            e = el.find(tag)
            if e is None:
                raise self.error(el, f"missing <{tag} link=...>")
            link = self.string(e, "link")
            if link not in links:
                raise self.error(e, f"{tag} link {link!r} is not a <link> of this robot"
                                    f"{did_you_mean(link, links)}")
            ends[tag] = link
        if ends["parent"] == ends["child"]:
            raise self.error(el, f"parent and child are the same link {ends['parent']!r}")
        axis = np.array([1.0, 0.0, 0.0])
        ael = el.find("axis")
        # the axis of a fixed, floating or spherical joint means nothing (generated files write
        # "0 0 0" there): it is not read
        if ael is not None and jtype in ONE_DOF_TYPES:
            axis = self.vector(ael, "xyz", 3, default=(1, 0, 0))
            n = norm(axis)
            if n < 1e-12:
                raise self.error(ael, f"axis must be non-zero, got {ael.get('xyz')!r}")
            axis = axis / n
        fields: dict = {}
        lel = el.find("limit")
        if lel is not None and jtype in ONE_DOF_TYPES:
            fields["effort"] = self.float(lel, "effort", np.inf, min=0.0)
            fields["velocity"] = self.float(lel, "velocity", np.inf, min=0.0)
            # generated descriptions write 0 for "not given"
            if fields["velocity"] == 0.0:
                fields["velocity"] = np.inf
                self.warn(lel, "zero-velocity-limit", "velocity limit 0 read as no velocity limit")
            if fields["effort"] == 0.0:
                fields["effort"] = np.inf
                self.warn(lel, "zero-effort-limit", "effort limit 0 read as no actuation limit "
                          "(the PD and feedforward torque are not clamped)")
            if jtype != "continuous":
                lower = self.float(lel, "lower", 0.0)
                upper = self.float(lel, "upper", 0.0)
                if lel.get("lower") is None and lel.get("upper") is None:
                    lower, upper = -np.inf, np.inf
                elif lower == upper:
                    self.warn(lel, "empty-position-range", f"lower and upper limits are both "
                              f"{lower:g}: read as no position limit")
                    lower, upper = -np.inf, np.inf
                elif lower > upper:
                    self.warn(lel, "inverted-position-range", f"lower limit {lower:g} is above "
                              f"upper limit {upper:g}: read as no position limit (as PyBullet "
                              "does)")
                    lower, upper = -np.inf, np.inf
                fields["lower"], fields["upper"] = lower, upper
        elif lel is None and jtype in ("revolute", "prismatic"):
            self.warn(el, "no-limit-element", f"{jtype} joint without <limit>: no position, "
                      "velocity or effort limits")
        del_ = el.find("dynamics")
        if del_ is not None:
            if jtype == "floating":
                raise self.error(del_, "<dynamics> is not supported on a floating joint")
            if jtype != "fixed":
                fields["damping"] = self.float(del_, "damping", 0.0, min=0.0)
                fields["friction"] = self.float(del_, "friction", 0.0, min=0.0)
                fields["rotor_inertia"] = self.float(del_, "rotor_inertia", 0.0, min=0.0)
                fields["stiffness"] = self.float(del_, "stiffness", 0.0, min=0.0)
                if jtype == "spherical":
                    if fields["friction"] > 0:
                        self.warn(del_, "spherical-friction", "friction is ignored on spherical "
                                  "joints")
                        fields["friction"] = 0.0
                    mount = self.vector(del_, "spring_mount", 4, default=(1, 0, 0, 0))
                    n = norm(mount)
                    if n < 1e-12:
                        raise self.error(del_, "spring_mount of a spherical joint must be a "
                                               "non-zero quaternion (w x y z)")
                    fields["spring_mount"] = mount / n
                else:
                    fields["spring_mount"] = self.vector(del_, "spring_mount", 1, default=(0,))
        mel = el.find("mimic")
        if mel is not None and jtype == "fixed":
            self.warn(mel, "mimic-on-fixed-joint", "<mimic> on a fixed joint has nothing to "
                      "follow with: ignored")
        elif mel is not None:
            if jtype not in ONE_DOF_TYPES:
                raise self.error(mel, f"<mimic> is only allowed on revolute, continuous or "
                                      f"prismatic joints, not on a {jtype} joint")
            fields["mimic"] = Mimic(joint=self.string(mel, "joint"),
                                    multiplier=self.float(mel, "multiplier", 1.0),
                                    offset=self.float(mel, "offset", 0.0))
        origin = self.origin(el)
        return Joint(name=name, type=jtype, parent=ends["parent"], child=ends["child"],
                     origin=origin, axis=axis, line=el.sourceline, **fields)

    def tree(self, root_el, links, joints, joint_els, base):
        """Order the joints depth-first from the root and decide the base type."""
        parent_joint: dict[str, Joint] = {}
        for j in joints:
            if j.child in parent_joint:
                first = parent_joint[j.child]
                raise self.error(joint_els[j.name], f"link {j.child!r} is already the child of "
                                 f"joint {first.name!r} (line {first.line}); a link has one parent")
            parent_joint[j.child] = j
        roots = [n for n in links if n not in parent_joint]
        if not roots:
            raise self.error(root_el, "the joints form a cycle: every link has a parent, so there "
                                      "is no root link")
        if len(roots) > 1:
            raise self.error(root_el, f"expected one root link, found {len(roots)}: "
                                      f"{', '.join(roots)} (each must be the child of a joint)")
        root_link = roots[0]
        children: dict[str, list[Joint]] = {}
        for j in joints:
            children.setdefault(j.parent, []).append(j)
        # depth-first pre-order from the root, children in file order (iterative: deep chains)
        ordered: list[Joint] = []
        seen = {root_link}
        stack = list(reversed(children.get(root_link, [])))
        while stack:
            j = stack.pop()
            ordered.append(j)
            seen.add(j.child)
            stack.extend(reversed(children.get(j.child, [])))
        unreached = [n for n in links if n not in seen]
        if unreached:
            raise self.error(root_el, "the joints form a cycle through links "
                                      f"{', '.join(unreached)} (not reachable from the root "
                                      f"{root_link!r})")
        floating_inside = [j for j in ordered if j.type == "floating"]
        if root_link == "world":
            first = [j for j in ordered if j.parent == "world"]
            if base == "floating":
                if len(first) != 1 or first[0].type not in ("fixed", "floating"):
                    raise ModelError("cannot make the base floating: the link 'world' must have "
                                     "exactly one child joint, and it must be fixed or floating",
                                     file=self.path)
                j0 = first[0]
                ordered[ordered.index(j0)] = _as_floating(j0)
            elif base == "fixed" and first and any(j.type == "floating" for j in first):
                ordered = [replace(j, type="fixed")
                           if j.type == "floating" and any(j is f for f in first) else j
                           for j in ordered]
            floating_inside = [j for j in ordered if j.type == "floating"]
            base_type = "floating" if any(j.parent == "world" for j in floating_inside) else "fixed"
        else:
            base_type = base or "floating"
            if base_type == "floating":
                if ROOT_JOINT_NAME in joint_els:
                    raise ModelError(f"a joint is named {ROOT_JOINT_NAME!r}, the name of the "
                                     "floating root joint; rename it", file=self.path)
                ordered.insert(0, Joint(name=ROOT_JOINT_NAME, type="floating", parent=None,
                                        child=root_link, origin=np.eye(4),
                                        axis=np.array([1.0, 0.0, 0.0])))
        for j in floating_inside:
            if not np.allclose(j.origin, np.eye(4), rtol=0, atol=0):
                raise self.error(joint_els[j.name], "a floating joint's pose is its coordinates; "
                                 "remove its <origin> (or make it the identity)")
            if j.parent != "world" or root_link != "world":
                raise self.error(joint_els[j.name], "a floating joint is only allowed between the "
                                 "link 'world' and the robot's base")
        return ordered, root_link, base_type

    def check_mimics(self, ordered, joint_els):
        by_name = {j.name: j for j in ordered}
        for j in ordered:
            if j.mimic is None:
                continue
            el = joint_els[j.name].find("mimic")
            if j.mimic.joint == j.name:
                raise self.error(el, f"joint {j.name!r} cannot mimic itself")
            leader = by_name.get(j.mimic.joint)
            if leader is None:
                raise self.error(el, f"mimic joint {j.mimic.joint!r} is not a joint of this robot"
                                     f"{did_you_mean(j.mimic.joint, by_name)}")
            if leader.type not in ONE_DOF_TYPES:
                raise self.error(el, f"mimic joint {leader.name!r} is a {leader.type} joint; "
                                     "expected revolute, continuous or prismatic")
        for j in ordered:  # follow leaders; a cycle is contradictory or redundant
            path = [j.name]
            cur = j
            while cur.mimic is not None:
                cur = by_name[cur.mimic.joint]
                if cur.name in path:
                    cycle = " -> ".join(path[path.index(cur.name):] + [cur.name])
                    raise self.error(joint_els[j.name].find("mimic"), f"mimic joints form a cycle "
                                     f"({cycle}); a leader must not follow its follower")
                path.append(cur.name)

    def merge_bodies(self, links, ordered, root_link):
        """Assign every link to the rigid body it is welded to; body i is Pinocchio joint i
        (body 0 is the world)."""
        out: dict[str, Link] = {}
        bodies: list[list[str]] = [[]]
        body_of = {}
        if not (ordered and ordered[0].parent is None):  # no synthetic floating root
            body_of[root_link] = (0, np.eye(4))
            bodies[0].append(root_link)
        for j in ordered:
            if j.type == "fixed":
                b, T = body_of[j.parent]
                body_of[j.child] = (b, matmul(T, j.origin))
                bodies[b].append(j.child)
            else:
                body_of[j.child] = (len(bodies), np.eye(4))
                bodies.append([j.child])
        for name, link in links.items():
            b, T = body_of[name]
            T = T.copy()
            T.setflags(write=False)
            out[name] = replace(link, body=b, body_T_link=T)
        if root_link == "world":
            w = links["world"]
            if w.inertial is not None and w.inertial.mass > 0:
                self.warnings.append(ModelWarning(
                    "world-mass", "link 'world' has mass; it is the fixed world and its inertia "
                    "is ignored", self.path, w.line, '<link name="world">'))
        return out, tuple(tuple(b) for b in bodies)

    def layout(self, ordered):
        q = v = 0
        coords: list[str] = []
        dofs: list[str] = []
        out = []
        for j in ordered:
            nq, nv = JOINT_NQ[j.type], JOINT_NV[j.type]
            out.append(replace(j, q_slice=slice(q, q + nq), u_slice=slice(v, v + nv)))
            q += nq
            v += nv
            n = j.name
            if j.type == "floating":
                coords += [f"{n}.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
                dofs += [f"{n}.{c}" for c in ("vx", "vy", "vz", "wx", "wy", "wz")]
            elif j.type == "spherical":
                coords += [f"{n}.{c}" for c in ("qw", "qx", "qy", "qz")]
                dofs += [f"{n}.{c}" for c in ("wx", "wy", "wz")]
            elif nq:
                coords.append(n)
                dofs.append(n)
        return out, q, v, coords, dofs

    # --- actuators ------------------------------------------------------------------------------
    def actuators(self, root, joints: dict[str, Joint]) -> tuple[Actuator, ...]:
        out = []
        driven: dict[str, str] = {}
        for k, el in enumerate(root.findall("actuator")):
            jname = self.string(el, "joint")
            j = joints.get(jname)
            if j is None:
                raise self.error(el, f"actuated joint {jname!r} is not a joint of this robot"
                                     f"{did_you_mean(jname, joints)}")
            if j.type not in ONE_DOF_TYPES:
                raise self.error(el, f"actuated joint {jname!r} is a {j.type} joint; expected "
                                     "revolute, continuous or prismatic")
            name = el.get("name") or f"{jname}_actuator"
            if jname in driven:
                raise self.error(el, f"joint {jname!r} already has the actuator {driven[jname]!r}")
            driven[jname] = name
            src, reader = el, self
            file_attr = el.get("file")
            if file_attr is not None:
                fpath = files.resolve(file_attr, self.dir)
                if not os.path.isfile(fpath):
                    raise self.error(el, f"actuator model file {file_attr!r} not found "
                                         f"(looked at {fpath})")
                froot = parse_xml_file(fpath, "actuator model")
                self.files.append(os.path.abspath(fpath))
                reader = AttributeReader(fpath)
                if froot.tag != "actuator_model":
                    raise reader.error(froot, "expected the root element <actuator_model>")
                inline = [a for a in ("gear_ratio", "output_damping", "output_friction") if el.get(a)]
                if inline or el.find("motor") is not None:
                    raise self.error(el, "give the actuator's parameters either inline or in "
                                         f"file={file_attr!r}, not both (found "
                                         f"{', '.join(inline + (['<motor>'] if el.find('motor') is not None else []))} inline)")
                src = froot
            gear = reader.float(src, "gear_ratio", 1.0, positive=True)
            out_damp = reader.float(src, "output_damping", 0.0, min=0.0)
            out_fric = reader.float(src, "output_friction", 0.0, min=0.0)
            motors = src.findall("motor")
            if len(motors) != 1:
                raise reader.error(src, f"expected exactly one <motor>, got {len(motors)}")
            motor = self.motor(reader, motors[0])
            couplings = []
            for cel in el.findall("coupling"):  # couplings name this robot's joints: inline only
                cj = self.string(cel, "joint")
                if cj not in joints:
                    raise self.error(cel, f"coupled joint {cj!r} is not a joint of this robot"
                                          f"{did_you_mean(cj, joints)}")
                if joints[cj].type not in ONE_DOF_TYPES:
                    raise self.error(cel, f"coupled joint {cj!r} is a {joints[cj].type} joint; "
                                          "expected revolute, continuous or prismatic")
                if cj == jname:
                    raise self.error(cel, f"an actuator cannot be coupled to its own joint {cj!r}; "
                                          "use gear_ratio")
                if any(c == cj for c, _ in couplings):
                    raise self.error(cel, f"joint {cj!r} is coupled twice")
                ratio = self.float(cel, "ratio", required=True)
                if ratio == 0:
                    raise self.error(cel, "coupling ratio must be non-zero, got '0'")
                couplings.append((cj, ratio))
            out.append(Actuator(name=name, joint=jname, gear_ratio=gear, output_damping=out_damp,
                                output_friction=out_fric, motor=motor,
                                couplings=tuple(couplings), line=el.sourceline))
        names = [a.name for a in out]
        for a in out:
            if names.count(a.name) > 1:
                raise ModelError(f"duplicate actuator name {a.name!r}", file=self.path, line=a.line)
        return tuple(out)

    @staticmethod
    def motor(reader: AttributeReader, el) -> Motor:
        R = reader.float(el, "resistance", required=True, positive=True)
        Kt = reader.float(el, "torque_constant", required=True, positive=True)
        has_kv, has_ke = el.get("velocity_constant") is not None, el.get("back_emf_constant") is not None
        if has_kv == has_ke:
            raise reader.error(el, "give exactly one of 'velocity_constant' (rad/(s V)) and "
                                   "'back_emf_constant' (V s/rad)")
        if has_kv:
            Kv = reader.float(el, "velocity_constant", positive=True)
        else:
            Kv = 1.0 / reader.float(el, "back_emf_constant", positive=True)
        V = reader.float(el, "bus_voltage", required=True, min=0.0)
        peak = reader.float(el, "peak_torque", np.inf, positive=True)
        return Motor(resistance=R, torque_constant=Kt, velocity_constant=Kv, bus_voltage=V,
                     peak_torque=peak)

    # --- loop constraints -----------------------------------------------------------------------
    def constraints(self, root, links: dict[str, Link], nq: int):
        out = []
        nominal = None
        blocks = root.findall("constraints")
        if len(blocks) > 1:
            raise self.error(blocks[1], "only one <constraints> element is allowed")
        if not blocks:
            return (), None
        el = blocks[0]
        if el.get("nominal_config") is not None:
            nominal = self.vector(el, "nominal_config", nq)
        for cel in el:
            if not isinstance(cel.tag, str):
                continue
            if cel.tag not in ("pin", "equality"):
                raise self.error(cel, "expected <pin> or <equality> inside <constraints>")
            b1, b2 = self.string(cel, "body1"), self.string(cel, "body2")
            for b in (b1, b2):
                if b not in links:
                    raise self.error(cel, f"link {b!r} is not a <link> of this robot"
                                          f"{did_you_mean(b, links)}")
            if links[b1].body == links[b2].body:
                raise self.error(cel, f"links {b1!r} and {b2!r} are welded into the same body; the "
                                      "constraint would do nothing")
            anchor = self.vector(cel, "anchor", 3, default=(0, 0, 0))
            if cel.tag == "pin":
                axes = np.eye(3)
                if cel.findall("axis"):
                    raise self.error(cel, "a <pin> holds all three directions and takes no <axis>")
            else:
                ax_els = cel.findall("axis")
                if len(ax_els) not in (1, 2):
                    raise self.error(cel, f"an <equality> takes one or two <axis xyz>, got "
                                          f"{len(ax_els)} (three axes: use <pin>)")
                axes = []
                for a in ax_els:
                    v = self.vector(a, "xyz", 3, required=True)
                    if norm(v) < 1e-12:
                        raise self.error(a, f"axis must be non-zero, got {a.get('xyz')!r}")
                    axes.append(v / norm(v))
                axes = np.array(axes)
                if len(axes) == 2 and norm(cross(axes[0], axes[1])) < 1e-6:
                    raise self.error(cel, "the two axes are parallel; give two independent axes")
            out.append(LoopConstraint(kind=cel.tag, body1=b1, body2=b2, anchor=anchor, axes=axes,
                                      line=cel.sourceline))
        return tuple(out), nominal


def _as_floating(j: Joint) -> Joint:
    """The joint below `world` made floating: its pose becomes the coordinates (origin dropped)."""
    return replace(j, type="floating", axis=np.array([1.0, 0.0, 0.0]), origin=np.eye(4))


def _package_xml_name(folder: str) -> str | None:
    """The `<name>` of `folder/package.xml`, if there is one."""
    path = os.path.join(folder, "package.xml")
    if not os.path.isfile(path):
        return None
    try:
        root = parse_xml_file(path, "package.xml")
    except ModelError:
        return None
    name = root.find("name")
    return name.text.strip() if name is not None and name.text else None

