"""Small models written inline in tests (MuJoCo's habit): one joint, known inertia."""

from raisimcli.model import load_urdf_string
from raisimcli.physics import World


def slider_urdf(mass=1.0, limit="", dynamics="", actuator="") -> str:
    """A body of `mass` kg on a prismatic joint along x (gravity does not act along it)."""
    return f"""<robot name="slider"><link name="world"/>
      <link name="block"><inertial><mass value="{mass}"/>
        <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="x" type="prismatic"><parent link="world"/><child link="block"/>
        <axis xyz="1 0 0"/>{limit}{dynamics}</joint>{actuator}</robot>"""


def wheel_urdf(inertia=0.5, limit="", dynamics="", actuator="") -> str:
    """A wheel of rotational inertia `inertia` about the vertical z axis (no gravity torque)."""
    return f"""<robot name="wheel"><link name="world"/>
      <link name="disc"><inertial><mass value="2"/>
        <inertia ixx="1" iyy="1" izz="{inertia}" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="spin" type="revolute"><parent link="world"/><child link="disc"/>
        <axis xyz="0 0 1"/>{limit}{dynamics}</joint>{actuator}</robot>"""


def world_with(urdf_text: str, dt=0.001, gravity=(0, 0, -9.81)):
    w = World(dt, gravity)
    return w, w.add_articulated_system(load_urdf_string(urdf_text, path="inline.urdf"))


def folded_arm_urdf() -> str:
    """A floating base with an arm that folds back onto it: spheres of radius 0.1 m on the base
    (at its origin) and on the link "lower" (0.05 m below joint "fold", which sits 0.2 m above
    the base), centres 0.15 m apart at the arm's q = 0, so the two overlap by 0.05 m. Base and
    lower are not joined by a joint (the link "upper" between them has no shape). Turning
    "fold" by pi/2 moves lower's sphere to (-0.05, 0, 0.2) from the base: 0.206 m from the
    base's centre, apart."""
    inertia = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
    ball = '<collision><origin xyz="{}"/><geometry><sphere radius="0.1"/></geometry></collision>'
    return f"""<robot name="folded">
      <link name="base"><inertial><mass value="1"/>{inertia}</inertial>{ball.format("0 0 0")}</link>
      <joint name="turn" type="revolute"><parent link="base"/><child link="upper"/>
        <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
        <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
      <link name="upper"><inertial><mass value="1"/>{inertia}</inertial></link>
      <joint name="fold" type="revolute"><parent link="upper"/><child link="lower"/>
        <origin xyz="0 0 -0.1"/><axis xyz="0 1 0"/>
        <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
      <link name="lower"><inertial><origin xyz="0 0 -0.05"/><mass value="1"/>{inertia}
        </inertial>{ball.format("0 0 -0.05")}</link>
    </robot>"""


def pendulum_scenario(steps: int) -> str:
    """A scenario of the shipped pendulum, `steps` steps from 0.5 rad (the robot "p")."""
    from conftest import ROBOTS
    return f"""[world]
dt = 0.001
steps = {steps}
[[robot]]
name = "p"
urdf = "{ROBOTS}/pendulum.urdf"
initial = {{ q = [0.5] }}
"""
