"""The paper's probe protocol: a linear layer trained with Adam (Section III-D).

``torch.nn.Linear`` from embeddings z-scored with the training frames' statistics to actions
z-scored the same way, trained on shuffled mini-batches with Adam and the mean squared error
over the action dimensions that vary (the reference code's settings: 10,000 epochs, batch
200, learning rate 1e-3); :class:`s2r.metrics.action_probe.ActionProbe` with
``solver="adam"`` scores it as ``1 - mean training loss of the last 100 epochs``. The
closed-form ridge solver is the default; this one reproduces the paper.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.checks import check_number
from s2r.progress import ProgressCallback, report

# The paper's probe protocol (Section III-D and the reference code).
PAPER_EPOCHS = 10_000
PAPER_BATCH_SIZE = 200
PAPER_LR = 1e-3
PAPER_SCORE_LAST = 100


@dataclass(frozen=True, eq=False)
class AdamFit:
    """A linear probe trained by :func:`fit_adam`.

    Attributes
    ----------
    coef : ndarray of shape (A, D)
        Weights on RAW embeddings predicting standardised actions.
    intercept : ndarray of shape (A,)
    action_mean, action_scale : ndarray of shape (A,)
        Standardisation of the actions (training set; scale 1 for constant dims).
    scored : ndarray of shape (A,), bool
        Dimensions that vary in the training set (the ones the loss averages over).
    loss_curve : ndarray of shape (epochs,)
        Mean training loss (scored dims) per epoch.
    """

    coef: np.ndarray
    intercept: np.ndarray
    action_mean: np.ndarray
    action_scale: np.ndarray
    scored: np.ndarray
    loss_curve: np.ndarray


def fit_adam(Z: np.ndarray, Y: np.ndarray, *, fit_intercept: bool = True,
             epochs: int = PAPER_EPOCHS, batch_size: int = PAPER_BATCH_SIZE,
             lr: float = PAPER_LR, weight_decay: float = 0.0, seed: int = 0,
             device: Optional[str] = None,
             progress: Optional[ProgressCallback] = None) -> AdamFit:
    """Train ``torch.nn.Linear`` from ``Z (N, D)`` to ``Y (N, A)`` (validated float arrays)
    with the paper's protocol; ``progress`` is called once per epoch."""
    import torch

    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        check_number(name, value, low=1, integer=True)
    check_number("lr", lr, low=0, low_open=True)
    check_number("weight_decay", weight_decay, low=0)
    x_mean, x_std = mom.prescale(Z)
    if not fit_intercept:
        x_mean = np.zeros_like(x_mean)
    y_mean, y_std = mom.prescale(Y)
    Yc = (Y - y_mean) / y_std
    scored = Yc.var(axis=0) > mom.CONSTANT_VARIANCE
    if not scored.any():
        raise MetricError("every action dimension is constant in the training frames: "
                          "there is nothing for the action probe to predict")
    device = torch.device(device or "cpu")
    X = torch.as_tensor(mom.standardised(Z, x_mean, x_std, dtype=np.float32), device=device)
    T = torch.as_tensor(Yc.astype(np.float32), device=device)
    mask = torch.as_tensor(scored.astype(np.float32), device=device)
    n, D = X.shape
    A = T.shape[1]
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    layer = torch.nn.Linear(D, A, bias=fit_intercept).to(device)
    with torch.no_grad():  # torch's default init, drawn from our own generator
        bound = 1.0 / np.sqrt(D)
        layer.weight.copy_(torch.empty(A, D).uniform_(-bound, bound, generator=gen))
        if layer.bias is not None:
            layer.bias.copy_(torch.empty(A).uniform_(-bound, bound, generator=gen))
    opt = torch.optim.Adam(layer.parameters(), lr=float(lr), weight_decay=float(weight_decay))
    k = float(mask.sum())
    bs = int(batch_size)
    curve = np.empty(int(epochs))
    with _torch_threads_for(bs * D * A, device):
        for epoch in range(int(epochs)):
            curve[epoch] = _adam_epoch(layer, opt, X, T, mask, k, bs, gen)
            report(progress, epoch + 1, int(epochs), f"loss {curve[epoch]:.4f}")
    Wn = layer.weight.detach().cpu().double().numpy().T  # (D, A) on standardised inputs
    bn = (layer.bias.detach().cpu().double().numpy() if layer.bias is not None
          else np.zeros(A))
    W = Wn / x_std[:, None]
    return AdamFit(coef=W.T.copy(), intercept=bn - x_mean @ W, action_mean=y_mean,
                   action_scale=y_std, scored=scored, loss_curve=curve)


def _adam_epoch(layer, opt, X, T, mask, k: float, bs: int, gen) -> float:
    """One pass over shuffled mini-batches; returns the mean batch loss (scored dims)."""
    import torch

    n = X.shape[0]
    perm = torch.randperm(n, generator=gen).to(X.device)
    total, batches = torch.zeros((), device=X.device), 0
    for start in range(0, n, bs):
        idx = perm[start:start + bs]
        loss = ((layer(X[idx]) - T[idx]) ** 2 * mask).sum() / (idx.numel() * k)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
        batches += 1
    return float(total) / batches


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block on one torch CPU thread (the count is restored afterwards).

    Besides speed for tiny steps, one thread makes a CPU fit the same on every machine: the
    order of a multi-threaded reduction depends on the thread count (a behaviour-cloning MLP
    fitted on 2 threads ended 0.012 away in its weights from the same fit on 1).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def _torch_threads_for(flops_per_step: int, device) -> Iterator[None]:
    """Run tiny CPU steps (``device``: a ``torch.device``) on one torch thread (restored
    afterwards).

    A mini-batch step of a small probe is a few microseconds of arithmetic; with several
    threads on a busy machine the thread synchronisation costs many times the work.
    """
    if device.type != "cpu" or flops_per_step > 2_000_000:
        yield
        return
    with one_torch_thread():
        yield
