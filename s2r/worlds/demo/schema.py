"""The demo's state and action schema: the names of the state's and the action's columns, which
columns are the robot's own state and which the task's, and the values the gripper's columns
take (shared by the scripted episodes, the renderer, the task simulator, its expert and the
static-scene memory).
"""

from __future__ import annotations

from s2r.worlds.demo.scene import LEG_HALF

__all__ = ["ACTION_NAMES", "STATE_NAMES", "PROPRIO_COLUMNS", "TASK_COLUMNS", "PROPRIO_NAMES",
           "EE_POS", "EE_ROT", "GRIP", "LEG_POS", "LEG_ROT", "TOP", "GRIP_CLOSE", "GRIP_OPEN",
           "LEG_WIDTH", "INSERT_DEPTH"]

ACTION_NAMES = ["pos_x", "pos_y", "pos_z", "rot6d_0", "rot6d_1", "rot6d_2", "rot6d_3",
                "rot6d_4", "rot6d_5", "gripper"]
STATE_NAMES = (["ee_x", "ee_y", "ee_z"] + [f"ee_rot6d_{k}" for k in range(6)]
               + ["gripper_width", "leg_x", "leg_y", "leg_z"]
               + [f"leg_rot6d_{k}" for k in range(6)] + ["top_x", "top_y", "top_yaw"])
#: Column slices of the state vector (:data:`STATE_NAMES`).
EE_POS, EE_ROT, GRIP, LEG_POS, LEG_ROT, TOP = (slice(0, 3), slice(3, 9), 9, slice(10, 13),
                                               slice(13, 19), slice(19, 22))
#: The robot's own state (proprioception: end effector pose, gripper width), what the paper's
#: policies see beside the frame; and the task state (leg and tabletop pose), which a policy
#: must read from the frame.
PROPRIO_COLUMNS, TASK_COLUMNS = slice(0, 10), slice(10, 22)
PROPRIO_NAMES = tuple(STATE_NAMES[PROPRIO_COLUMNS])

#: The action's gripper command: close, open.
GRIP_CLOSE, GRIP_OPEN = 1.0, -1.0
#: The state's gripper width while it holds a leg (closed on nothing it goes to 0).
LEG_WIDTH = 2 * LEG_HALF[0]
#: How deep the leg's foot goes into the hole when inserted (m).
INSERT_DEPTH = 0.012
