"""``train-encoder`` and the ``simcnn`` encoders: a small CNN trained on a dataset's sim frames,
registered through the encoder config file, fingerprinted by its weights file; the demo's
built-in ``simcnn-dr*`` controls, trained on first use."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import DataError, EncoderError
from s2r.frameset import FrameSet
from s2r.settings import current


def train_controls_small(monkeypatch, **changes):
    """The demo's built-in controls trained with ``changes`` to their recipe (e.g. 2 episodes,
    1 epoch: seconds, not 12-25 minutes), as the world declares them."""
    import dataclasses

    from s2r.worlds import WORLDS

    controls = WORLDS["demo"].controls
    for cid, control in list(controls.items()):
        monkeypatch.setitem(controls, cid, dataclasses.replace(control, **changes))


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Weights folder and encoder config of this test only."""
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("S2R_ENCODERS", str(tmp_path / "encoders.toml"))
    (tmp_path / "encoders.toml").write_text("")
    return tmp_path


def _square_frameset(n_sim=48, n_real=8, seed=0) -> FrameSet:
    """Frames with a white square at a random place; state = its centre (pixels), actions =
    its centre scaled: a learnable target."""
    rng = np.random.default_rng(seed)
    n = n_sim + n_real
    images = np.zeros((n, 24, 32, 3), np.uint8)
    xy = np.stack([rng.integers(3, 29, n), rng.integers(3, 21, n)], axis=1)
    for i, (x, y) in enumerate(xy):
        images[i, y - 3:y + 3, x - 3:x + 3] = 255
    if n_real:
        images[n_sim:] = 255 - images[n_sim:]          # the real look: inverted
    return FrameSet(images=images, actions=(xy / 10.0).astype(np.float32),
                    domain=np.array(["sim"] * n_sim + ["real"] * n_real),
                    episode=np.arange(n) // 4, step=np.arange(n) % 4,
                    state=xy.astype(np.float32), action_names=["ax", "ay"], name="squares")


def test_augmentation_strength_is_checked_scaled_and_seeded():
    import torch

    from s2r.encoders.simcnn import augmentation

    assert augmentation(0.0) is None
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(EncoderError, match=r"\[0, 1\]"):
            augmentation(bad)
    x = torch.from_numpy(_square_frameset(4, 0).read_images([0])[0]).permute(2, 0, 1).contiguous()
    outs = []
    for _ in range(2):
        torch.manual_seed(3)
        outs.append(augmentation(1.0)(x))
    assert torch.equal(outs[0], outs[1])                        # seeded
    assert float((outs[0] - x.float() / 255).abs().mean()) > 0.01   # it changes the frame
    torch.manual_seed(3)
    weak = augmentation(0.05)(x)
    assert float((weak - x.float() / 255).abs().mean()) < float(
        (outs[0] - x.float() / 255).abs().mean())               # strength scales it


def test_train_encoder_registers_a_user_encoder_from_a_folder_dataset(places):
    from s2r.datasets import load_dataset
    from s2r.datasets.folder import write_folder
    from s2r.encoders import build_encoder, get_spec, status, weights_fingerprint
    from s2r.metrics.action_probe import ActionProbe
    from s2r.pipeline.train_encoder import train_encoder

    folder = write_folder(_square_frameset(), places / "squares")
    fs = load_dataset(str(folder))
    result = train_encoder(fs, "my-cnn", augment=0.3, epochs=25, seed=1)
    assert result["frames"] == 48 and result["targets"] == "state and actions"
    assert result["loss"][-1] < 0.5 * result["loss"][0]          # it learned
    weights = places / "weights" / "my-cnn.safetensors"
    assert weights.is_file()
    assert "my-cnn" in (places / "encoders.toml").read_text()
    spec = get_spec("my-cnn", settings=current())
    assert spec.backend == "simcnn" and spec.source != "builtin" and spec.dim == 128
    assert status("my-cnn", settings=current()).state == "ready"
    assert weights_fingerprint("my-cnn", settings=current()).startswith("sha256:")
    enc = build_encoder("my-cnn", device="cpu", settings=current())
    sim = fs.indices("sim")
    Z = enc.embed(fs.read_images(sim))
    assert Z.shape == (48, 128) and np.all(np.isfinite(Z))
    # the embedding holds the square's place: a ridge probe reads it back (train = test
    # here; what matters is that it is far better than the mean's error)
    pred = ActionProbe(alpha=1e-3).fit(Z, fs.state[sim]).predict_actions(Z)
    err = np.abs(pred - fs.state[sim]).mean()
    assert err < 0.5 * np.abs(fs.state[sim] - fs.state[sim].mean(0)).mean()
    # a second name may not reuse the first; a built-in id is refused
    with pytest.raises(EncoderError, match="already"):
        train_encoder(fs, "my-cnn", augment=0.0, epochs=1)
    with pytest.raises(EncoderError, match="built-in"):
        train_encoder(fs, "pixels", augment=0.0, epochs=1)


def test_training_is_deterministic_and_reads_sim_frames_only():
    from s2r.encoders.simcnn import train_simcnn
    from s2r.pipeline.train_encoder import training_targets

    fs = _square_frameset(16, 8)
    sim, targets, what = training_targets(fs)
    assert np.array_equal(sim, np.arange(16)) and targets.shape == (16, 4)
    a, _ = train_simcnn(fs.read_images(sim), targets, augment=0.5, seed=2, epochs=1)
    b, _ = train_simcnn(fs.read_images(sim), targets, augment=0.5, seed=2, epochs=1)
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


def test_a_dataset_without_actions_or_state_is_one_clear_error():
    from s2r.pipeline.train_encoder import training_targets

    fs = _square_frameset(8, 4)
    bare = FrameSet(images=fs.read_images(np.arange(12)), actions=np.zeros((12, 0), np.float32),
                    domain=fs.domain,
                    episode=fs.episode, step=fs.step, name="bare")
    with pytest.raises(DataError, match="needs actions or robot state"):
        training_targets(bare)


@pytest.mark.parametrize("args, message", [
    (["--augment", "1.5", "--out", "x"], "--augment: expected a strength in [0, 1]"),
    (["--augment", "nan", "--out", "x"], "--augment: expected a strength in [0, 1]"),
    (["--augment", "0.5", "--out", "a:b"], "--out: 'a:b' may not contain ':'"),
    (["--augment", "0.5", "--out", "x", "--epochs", "0"],
     "--epochs must be an integer in [1, 10,000], got 0"),
])
def test_cli_bad_arguments_are_one_error_line(places, capsys, args, message):
    from s2r.cli import main
    from s2r.datasets.folder import write_folder

    folder = write_folder(_square_frameset(8, 4), places / "squares")
    assert main(["train-encoder", str(folder), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and message in err[-1] and "Traceback" not in "".join(err)
    assert not (places / "weights").exists() or not any((places / "weights").iterdir())


def test_cli_trains_and_registers(places, capsys):
    from s2r.cli import main
    from s2r.datasets.folder import write_folder

    folder = write_folder(_square_frameset(16, 4), places / "squares")
    assert main(["train-encoder", str(folder), "--augment", "0.5", "--out", "sq",
                 "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "trained sq on 16 sim frames" in out and "registered in" in out
    assert main(["encoders", "sq"]) in (0, None) or True     # listed without error
    from s2r.encoders import get_spec

    assert get_spec("sq", settings=current()).backend == "simcnn"


def test_builtin_controls_are_registered_and_trained_on_first_use(places, monkeypatch):
    from s2r.encoders import build_encoder, list_encoders, status, weights_fingerprint
    from s2r.encoders.simcnn_specs import CONTROL_VERSIONS

    ids = [s.id for s in list_encoders("simcnn-*")]
    assert ids == ["simcnn-dr0", "simcnn-dr0.5", "simcnn-dr1"]
    st = status("simcnn-dr1", settings=current())
    assert st.state == "ready" and "trained on first use" in st.message
    # a key is never written yet
    assert weights_fingerprint("simcnn-dr1", settings=current()) == "missing"
    train_controls_small(monkeypatch, episodes=2, epochs=1)
    enc = build_encoder("simcnn-dr1", device="cpu", settings=current())
    assert (places / "weights" / f"simcnn-dr1.v{CONTROL_VERSIONS['simcnn-dr1']}.safetensors"
            ).is_file()
    assert weights_fingerprint("simcnn-dr1", settings=current()).startswith("sha256:")
    assert enc.embed(np.zeros((2, 96, 128, 3), np.uint8)).shape == (2, 128)


def test_randomised_frames_vary_the_look_with_strength():
    from s2r.worlds.demo.dr_frames import randomised_frames

    f0, s0 = randomised_frames(2, 3, strength=0.0, height=24, width=32)
    f1, s1 = randomised_frames(2, 3, strength=1.0, height=24, width=32)
    again, _ = randomised_frames(2, 3, strength=1.0, height=24, width=32)
    assert np.array_equal(s0, s1)                  # the same episodes ...
    assert not np.array_equal(f0, f1)              # ... in another look
    assert np.array_equal(f1, again)               # seeded
    with pytest.raises(ValueError, match="strength"):
        randomised_frames(1, 1, strength=2.0)


#: How each version of each built-in control is trained: (randomisation, episodes, steps,
#: epochs, seed, task-state columns, frame size, task). The weights file name carries the
#: version only, so a change to a recipe without a version bump would reuse weights trained
#: the old way.
_MW_TASK = (("task", ("button-press-topdown-v3", "assembly-v3")), ("camera", "corner"),
            ("repeat", 2))
CONTROL_RECIPES = {("simcnn-dr0", 2): (0.0, 750, 24, 20, 0, (10, 22), (96, 128), ()),
                   ("simcnn-dr0.5", 3): (0.5, 1500, 24, 20, 0, (10, 22), (96, 128), ()),
                   ("simcnn-dr1", 3): (1.0, 1500, 24, 20, 0, (10, 22), (96, 128), ()),
                   ("mw-simcnn-dr0", 2): (0.0, 200, 60, 12, 0, (4, 14), (96, 128), _MW_TASK),
                   # v3: 600 episodes x 16 epochs, gaps weighted toward 1, 48 texture sets
                   ("mw-simcnn-dr1", 3): (1.0, 600, 60, 16, 0, (4, 14), (96, 128), _MW_TASK),
                   # the study's controls between them: episodes x epochs interpolated
                   ("mw-simcnn-dr0.25", 1): (0.25, 300, 60, 13, 0, (4, 14), (96, 128),
                                             _MW_TASK),
                   ("mw-simcnn-dr0.5", 1): (0.5, 400, 60, 14, 0, (4, 14), (96, 128), _MW_TASK),
                   ("mw-simcnn-dr0.75", 1): (0.75, 500, 60, 15, 0, (4, 14), (96, 128),
                                             _MW_TASK)}


def test_the_controls_training_recipe_is_the_one_their_version_names():
    from s2r.encoders.simcnn_specs import CONTROL_VERSIONS, CONTROLS
    from s2r.worlds import controls

    assert set(CONTROL_VERSIONS) == set(CONTROLS) == set(controls())
    for cid, c in controls().items():
        recipe = (c.strength, c.episodes, c.steps, c.epochs, c.seed, c.state_columns,
                  (c.height, c.width), c.task)
        assert CONTROL_RECIPES.get((cid, c.version)) == recipe, (
            f"{cid}'s training changed: bump its version where its world declares it "
            "(s2r/worlds/<world>/controls.py) and record the new recipe here")


def test_a_control_trains_on_its_worlds_randomised_frames_of_the_task_state(monkeypatch):
    """What the backend trains on is the world's ``randomised_frames``, labelled with the
    task's task-state columns (the demo's 10:22, as the recipe records)."""
    from s2r.encoders import get_spec, simcnn
    from s2r.encoders.backends import simcnn as backend
    from s2r.worlds.demo.dr_frames import randomised_frames

    seen = {}

    def fake_train(frames, targets, **kw):
        seen.update(frames=frames, targets=targets, **kw)
        raise RuntimeError("stop here")

    train_controls_small(monkeypatch, episodes=2, steps=3)
    monkeypatch.setattr(simcnn, "train_simcnn", fake_train)
    with pytest.raises(RuntimeError, match="stop here"):
        backend.train_control(get_spec("simcnn-dr0.5"), None, settings=current())
    frames, states = randomised_frames(2, 3, strength=0.5, seed=0, height=96, width=128)
    np.testing.assert_array_equal(seen["frames"], frames)
    np.testing.assert_array_equal(seen["targets"], states[:, 10:22])
    assert (seen["seed"], seen["epochs"], seen["augment"]) == (0, 20, 0.0)


# ---- the built-in controls' files are s2r's (issue 33, item 1) ------------------------------
@pytest.fixture
def never_train(monkeypatch):
    from s2r.encoders.backends import simcnn as backend

    def trained(*args, **kwargs):
        raise AssertionError("a control was trained")

    monkeypatch.setattr(backend, "train_control", trained)


def test_a_trained_control_records_its_recipe_and_is_loaded_without_training(places,
                                                                              monkeypatch):
    from s2r.encoders import build_encoder, get_spec, status
    from s2r.encoders.backends import simcnn as backend
    from s2r.encoders.simcnn import read_simcnn_meta

    train_controls_small(monkeypatch, episodes=2, epochs=1)
    build_encoder("simcnn-dr0", device="cpu", settings=current())
    path = places / "weights" / "simcnn-dr0.v2.safetensors"
    info = read_simcnn_meta(path)
    assert info["recipe"] == {"control": "simcnn-dr0", "version": 2, "randomisation": 0.0,
                              "episodes": 2, "steps": 24, "epochs": 1, "seed": 0,
                              "augment": 0.0, "state_columns": [10, 22], "dim": 128,
                              "input_size": [48, 64]}
    assert oct(path.stat().st_mode & 0o777) != "0o600"
    monkeypatch.setattr(backend, "train_control", lambda *a, **k: pytest.fail("retrained"))
    assert status("simcnn-dr0", settings=current()).message == f"weights file {path}"
    build_encoder(get_spec("simcnn-dr0"), device="cpu", settings=current())
    train_controls_small(monkeypatch, episodes=3)            # another recipe: not this file
    st = status("simcnn-dr0", settings=current())
    assert st.state == "weights-missing" and "records episodes 2 where v2 has 3" in st.message


def test_control_files_trained_before_recipes_were_stored_are_recognised(places, never_train):
    """The demo's controls already trained under these names lack ``recipe``: they are
    recognised by the fields they recorded (no version bump, no 12-25 minute retrain)."""
    from s2r.encoders import build_encoder, status, weights_fingerprint
    from tests.helpers.simcnn_files import CONTROL_FILES, LEGACY_CONTROL_INFO, write_simcnn

    for cid, file in CONTROL_FILES.items():
        write_simcnn(places / "weights" / file, LEGACY_CONTROL_INFO[cid])
        found = status(cid, settings=current())
        assert found.state == "ready" and file in found.message
        assert weights_fingerprint(cid, settings=current()).startswith("sha256:")
    enc = build_encoder("simcnn-dr0.5", device="cpu", settings=current())
    assert enc.embed(np.zeros((2, 96, 128, 3), np.uint8)).shape == (2, 128)


def test_a_bad_control_file_is_named_in_status_and_never_trained_over(places, never_train):
    from s2r.encoders import build_encoder, status, weights_fingerprint

    path = places / "weights" / "simcnn-dr1.v3.safetensors"
    path.mkdir(parents=True)
    st = status("simcnn-dr1", settings=current())
    assert st.state == "weights-missing" and st.file == str(path)
    assert st.message == (f"{path} is a folder, not a file s2r trained for simcnn-dr1; delete "
                          "it and s2r trains simcnn-dr1 again on first use (about 25 "
                          "CPU-minutes)")
    # no cache key is written
    assert weights_fingerprint("simcnn-dr1", settings=current()) == "missing"
    with pytest.raises(EncoderError, match="is a folder, not a file s2r trained"):
        build_encoder("simcnn-dr1", device="cpu", settings=current())
    assert path.is_dir()


def test_a_device_at_a_control_path_is_refused(places, monkeypatch, never_train):
    """A character device (made by root with mknod): refused by its mode, never opened."""
    import os
    import stat

    from s2r.encoders import build_encoder

    path = str(places / "weights" / "simcnn-dr0.v2.safetensors")
    real_lstat = os.lstat

    def lstat(p, *args, **kwargs):
        if str(p) == path:
            return os.stat_result((stat.S_IFCHR | 0o666,) + (0,) * 9)
        return real_lstat(p, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    with pytest.raises(EncoderError, match="is a device, not a file s2r trained for "
                                           "simcnn-dr0; delete it"):
        build_encoder("simcnn-dr0", device="cpu", settings=current())


def test_a_control_saved_meanwhile_by_another_process_is_used_if_it_is_the_control(
        places, monkeypatch):
    from s2r.encoders import get_spec, simcnn
    from s2r.encoders.backends import simcnn as backend
    from tests.helpers.simcnn_files import LEGACY_CONTROL_INFO, write_simcnn

    train_controls_small(monkeypatch, episodes=2, epochs=1)
    path = places / "weights" / "simcnn-dr1.v3.safetensors"
    real_train = simcnn.train_simcnn

    def train_while_another_saves(*args, **kwargs):
        out = real_train(*args, **kwargs)
        info = {**LEGACY_CONTROL_INFO["simcnn-dr1"], "episodes": 2, "epochs": 1}
        write_simcnn(path, info, seed=5)
        return out

    monkeypatch.setattr(simcnn, "train_simcnn", train_while_another_saves)
    spec = get_spec("simcnn-dr1")
    assert backend.train_control(spec, path, settings=current()) == path
    assert b'"recipe"' not in path.read_bytes()              # theirs, kept, not replaced
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]   # no .tmp left
    path.unlink()

    def train_while_junk_appears(*args, **kwargs):
        out = real_train(*args, **kwargs)
        path.write_bytes(b"junk")
        return out

    monkeypatch.setattr(simcnn, "train_simcnn", train_while_junk_appears)
    with pytest.raises(EncoderError, match="not a file s2r trained for simcnn-dr1"):
        backend.train_control(spec, path, settings=current())
    assert path.read_bytes() == b"junk"


def test_save_simcnn_exclusive_never_replaces_and_read_checks_the_header(tmp_path):
    from s2r.encoders.simcnn import read_simcnn_meta, save_simcnn
    from tests.helpers.simcnn_files import simcnn_state, user_info

    path = tmp_path / "m.safetensors"
    save_simcnn(path, simcnn_state(), user_info())
    assert read_simcnn_meta(path) == user_info()
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        save_simcnn(path, simcnn_state(seed=1), user_info(), exclusive=True)
    assert path.read_bytes() == before
    (tmp_path / "link.safetensors").symlink_to(tmp_path / "gone")
    with pytest.raises(FileExistsError):                     # a dangling link counts too
        save_simcnn(tmp_path / "link.safetensors", simcnn_state(), user_info(), exclusive=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.safetensors", "m.safetensors"]
    save_simcnn(path, simcnn_state(seed=1), user_info())     # not exclusive: replaced
    assert path.read_bytes() != before


def test_a_user_entry_and_its_file_must_agree_on_the_width(places):
    from s2r.encoders import build_encoder, get_spec
    from tests.helpers.simcnn_files import user_info, write_simcnn

    path = write_simcnn(places / "mine.safetensors", user_info())
    config = places / "encoders.toml"
    config.write_text(f'[[encoders]]\nid = "mine"\nsimcnn = "{path}"\ndim = 64\n')
    with pytest.raises(EncoderError, match="field 'dim' is 64 but .*mine.safetensors holds 128"):
        get_spec("mine", settings=current())
    config.write_text(f'[[encoders]]\nid = "mine"\nsimcnn = "{path}"\ndim = 128\n')
    assert get_spec("mine", settings=current()).dim == 128
    write_simcnn(path, user_info(dim=64))                    # changed after the config was read
    with pytest.raises(EncoderError, match="64 wide now, was 128"):
        build_encoder("mine", device="cpu", settings=current())
