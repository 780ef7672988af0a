"""The stages of one simulation step, one module per numbered step of the spec ("Joint torque of a
simulation step"). Each stage takes what it needs and returns what it computes; the
ArticulatedSystem keeps the results in named buffers."""
