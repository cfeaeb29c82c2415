"""The demo task simulator: kinematic task, geometry, expert controllers, domain-randomised
frames (see :mod:`s2r.closedloop`)."""
