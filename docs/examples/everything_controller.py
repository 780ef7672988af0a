"""The controller of docs/examples/everything.toml: called between integrate1 and integrate2 of
every step with the time and the robot; here it holds the left front knee at -1.2 rad by its
feedforward torque on top of the scenario's PD."""


def control(t, robot):
    knee = robot.dof_names.index("LF_KFE")
    tau = robot.tau_ff.copy()
    tau[knee] = 20.0 * (-1.2 - robot.get_generalized_coordinate()[
        robot.coordinate_names.index("LF_KFE")])
    robot.set_generalized_force(tau)
