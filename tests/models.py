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
