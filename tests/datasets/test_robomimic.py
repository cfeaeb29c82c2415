"""robomimic HDF5 files (s2r.datasets.robomimic): round trip, camera, state and filter options."""

from __future__ import annotations

import pickle

import numpy as np

from s2r.datasets import load_dataset
from s2r.datasets.robomimic import OSC_POSE_NAMES, load_robomimic
from tests.helpers.datafiles import all_pixels, robomimic_demos, write_hdf5


def test_robomimic_round_trip(tmp_path):
    sim_demos = robomimic_demos([3, 4, 2])
    sim_demos = {"demo_10": sim_demos["demo_0"], "demo_2": sim_demos["demo_1"],
                 "demo_1": sim_demos["demo_2"]}
    real_demos = robomimic_demos([5], seed=3)
    env = {"env_name": "Lift", "env_kwargs": {"controller_configs": {"type": "OSC_POSE"}}}
    write_hdf5(tmp_path / "sim.hdf5", sim_demos, env_args=env)
    write_hdf5(tmp_path / "real.h5", real_demos, env_args=env)
    fs = load_dataset([str(tmp_path / "sim.hdf5"), str(tmp_path / "real.h5")])
    order = [sim_demos["demo_1"], sim_demos["demo_2"], sim_demos["demo_10"], real_demos["demo_0"]]
    np.testing.assert_array_equal(all_pixels(fs), np.concatenate([d["images"] for d in order]))
    np.testing.assert_array_equal(fs.actions, np.concatenate([d["actions"] for d in order]))
    np.testing.assert_array_equal(fs.episode, np.repeat([0, 1, 2, 3], [2, 4, 3, 5]))
    np.testing.assert_array_equal(fs.step[:6], [0, 1, 0, 1, 2, 3])
    expected_state = np.concatenate([np.concatenate(
        [d["robot0_eef_pos"], d["robot0_eef_quat"], d["robot0_gripper_qpos"]], axis=1)
        for d in order])
    np.testing.assert_array_equal(fs.state, expected_state)
    assert fs.action_names == OSC_POSE_NAMES
    assert fs.source["demos"]["sim"] == ["demo_1", "demo_2", "demo_10"]
    copy = pickle.loads(pickle.dumps(fs))  # h5py handles reopen in the copy
    np.testing.assert_array_equal(copy.read_images([8, 2, 10]), fs.read_images([8, 2, 10]))


def test_robomimic_camera_state_and_filter_options(tmp_path):
    demos = robomimic_demos([2, 3, 4], state=False)
    for d in demos.values():
        d["robot0_joint_pos"] = np.ones((len(d["actions"]), 7), np.float32)
    write_hdf5(tmp_path / "s.hdf5", demos, camera="robot0_eye_in_hand_image",
               masks={"train": ["demo_0", "demo_2"]})
    write_hdf5(tmp_path / "r.hdf5", demos, camera="robot0_eye_in_hand_image",
               masks={"train": ["demo_1"]})
    fs = load_robomimic(tmp_path / "s.hdf5", tmp_path / "r.hdf5", camera="robot0_eye_in_hand",
                        state_key="robot0_joint_pos", filter_key="train")
    assert (fs.n_frames("sim"), fs.n_frames("real")) == (6, 3)
    assert fs.state.shape == (9, 7) and fs.action_names == [f"a{j}" for j in range(7)]
    np.testing.assert_array_equal(fs.read_images([2]), demos["demo_2"]["images"][[0]])
    fs2 = load_robomimic(tmp_path / "s.hdf5", tmp_path / "r.hdf5",
                         camera="robot0_eye_in_hand_image")
    assert len(fs2) == 18 and fs2.state is None  # default state keys absent: no state
