"""Saliency of frame pairs of a FrameSet (s2r.pipeline.saliency) and ``python -m s2r saliency``."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import S2RError


@pytest.fixture(scope="module")
def resnet18_random():
    from s2r.encoders import build_encoder

    return build_encoder("resnet18@random", device="cpu")


def test_pair_saliency_domain_target_explains_each_frame_toward_its_domain(
        paired_demo, resnet18_random):
    from s2r.pairing import pair_frames
    from s2r.pipeline.saliency import pair_saliency, pair_targets

    sim_idx = paired_demo.indices("sim")[[0, 7]]
    result = pair_saliency(paired_demo, resnet18_random, sim_idx, target="domain")
    assert np.array_equal(result.real_indices, pair_frames(paired_demo, sim_idx))
    assert (paired_demo.domain[result.real_indices] == "real").all()
    H, W = paired_demo.image_shape[:2]
    assert result.sim.maps.shape == result.real.maps.shape == (2, H, W)
    assert result.sim.target == "domain[sim]" and result.real.target == "domain[real]"
    measures = result.measures()
    assert len(measures) == 2
    for m in measures:
        assert -1.0 <= m["agreement"] <= 1.0
        assert 0.0 <= m["sim"]["focus"] <= 1.0 and 0.0 < m["sim"]["area"] < 1.0

    t_sim, t_real = pair_targets(paired_demo, resnet18_random, "action", action_dim="pos_y")
    assert t_sim is t_real and t_sim.dim == 1
    with pytest.raises(S2RError, match="unknown action dimension 'yaw'"):
        pair_targets(paired_demo, resnet18_random, "action", action_dim="yaw")


def test_saliency_cli_writes_pair_pngs_and_measures(tmp_path, capsys):
    import json

    from PIL import Image

    from s2r.cli import main

    out = tmp_path / "sal"
    dataset = "demo:episodes=2,steps=6,height=64,width=80,paired=1"
    code = main(["saliency", dataset, "--encoder", "resnet18@random", "--frames", "0,4",
                 "--target", "action", "--action-dim", "2", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "saliency.json").read_text())
    assert report["encoder"] == "resnet18@random" and report["target"] == "action[2]"
    assert [p["sim_index"] for p in report["pairs"]] == [0, 4]
    for pair in report["pairs"]:
        image = np.asarray(Image.open(out / pair["png"]))
        assert image.shape == (64, 2 * 80 + 4, 3)
        assert pair["sim_focus"] is not None and "lift" in pair["real_focus"]
    assert "agreement" in capsys.readouterr().out

    code = main(["saliency", dataset, "--encoder", "pixels", "--frames", "0", "--out", str(out)])
    assert code == 2 and "no Grad-CAM layer" in capsys.readouterr().err
    code = main(["saliency", dataset, "--encoder", "pixels", "--frames", "1,x", "--out",
                 str(out)])
    assert code == 2 and "--frames" in capsys.readouterr().err
