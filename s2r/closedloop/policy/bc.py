"""Behaviour cloning on embeddings: a policy from (embedding, proprioception) to actions.

The paper's policies see the camera frame *and* the robot's own state. Here the frame is
its encoder embedding ``Z (N, D)`` and the proprioception ``proprio (N, P)`` is the robot
part of the state, a world task's :attr:`~s2r.worlds.base.TaskColumns.proprio` columns (for
the built-in demo the first 10: end-effector position, its 6-D rotation and the gripper
width); the task-state columns (the demo's leg and tabletop) are *not* proprioception -- the
policy must read them from the image. ``proprio``
may be ``None`` (embedding only).

Inputs are the concatenation ``[Z, proprio]``, each column z-scored with the mean and
standard deviation of the **training** frames only (a constant column gets scale 1).
Two kinds:

- ``"ridge"``: the library's :class:`~s2r.metrics.action_probe.ActionProbe` (closed-form
  ridge with intercept on standardised inputs, z-scored actions), fitted on every frame;
- ``"mlp"``: two hidden ReLU layers (256 each by default), Adam on mini-batches, MSE on
  z-scored actions, with early stopping on held-out whole episodes
  (:func:`split_episodes`): the weights of the epoch with the lowest held-out loss are kept.

Everything is seeded (the episode split, the initialisation, the batch order), so a fit is
deterministic for a given seed on one machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics.action_probe import DEFAULT_PROBE_ALPHA, ActionProbe
from s2r.metrics.adam import one_torch_thread
from s2r.checks import (check_choice, check_embeddings, check_frame_matrix,
                                    check_number)

KINDS = ("ridge", "mlp")


def _check_proprio(proprio, n: int) -> np.ndarray:
    """``proprio`` as a finite float64 ``(n, P)`` array (``P = 0`` for ``None``)."""
    if proprio is None:
        return np.zeros((n, 0))
    return check_frame_matrix("proprio", proprio, n, "P", min_columns=0)


def split_episodes(episode, *, val_fraction: float = 0.2, seed: int = 0):
    """Boolean ``(train, val)`` masks holding out whole episodes.

    The unique episode ids are shuffled with ``numpy.random.default_rng(seed)`` and the first
    ``round(val_fraction * E)`` (at least 1, at most ``E - 1``) are held out.
    """
    check_number("val_fraction", val_fraction, low=0, high=1, low_open=True)
    episode = np.asarray(episode)
    ids = np.unique(episode)
    if ids.size < 2:
        raise MetricError(f"episode must hold at least 2 episodes for a held-out split, "
                          f"got {ids.size}")
    k = int(min(max(round(val_fraction * ids.size), 1), ids.size - 1))
    held = np.random.default_rng(seed).permutation(ids)[:k]
    val = np.isin(episode, held)
    return ~val, val


@dataclass
class Policy:
    """A fitted behaviour-cloning policy; :meth:`predict` maps ``(Z, proprio)`` to actions.

    Attributes
    ----------
    kind : {"ridge", "mlp"}
    n_embed, n_proprio, n_actions : int
    x_mean, x_scale : ndarray of shape (n_embed + n_proprio,)
        Input standardisation (training frames).
    action_mean, action_scale : ndarray of shape (n_actions,)
        Action standardisation (training frames; scale 1 for constant dimensions).
    probe : ActionProbe or None
        ``kind="ridge"``: the fitted probe (on standardised inputs).
    module : torch.nn.Module or None
        ``kind="mlp"``: the network at its best epoch (CPU, eval mode).
    best_epoch, epochs_run : int
        MLP: the kept epoch (1-based) and how many were trained; ridge: 0.
    train_loss, val_loss : ndarray
        MLP: per-epoch mean training loss and held-out loss (z-scored action MSE).
    train_episodes, val_episodes : ndarray
        Episode ids used for fitting and for early stopping (ridge: all / none).
    """

    kind: str
    n_embed: int
    n_proprio: int
    n_actions: int
    x_mean: np.ndarray
    x_scale: np.ndarray
    action_mean: np.ndarray
    action_scale: np.ndarray
    probe: Optional[ActionProbe] = None
    module: object = None
    best_epoch: int = 0
    epochs_run: int = 0
    train_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    val_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    train_episodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    val_episodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def _inputs(self, Z, proprio) -> np.ndarray:
        Z = check_embeddings(Z, min_frames=1).Z
        if Z.shape[1] != self.n_embed:
            raise MetricError(f"embeddings have {Z.shape[1]} features but the policy was "
                              f"fitted on {self.n_embed}")
        if proprio is None and self.n_proprio:
            raise MetricError(f"proprio is required: the policy was fitted on "
                              f"{self.n_proprio} proprioception columns")
        P = _check_proprio(proprio, len(Z))
        if P.shape[1] != self.n_proprio:
            raise MetricError(f"proprio has {P.shape[1]} columns but the policy was fitted "
                              f"on {self.n_proprio}")
        X = np.concatenate([np.asarray(Z, dtype=np.float64), P], axis=1)
        return (X - self.x_mean) / self.x_scale

    def predict(self, Z, proprio=None) -> np.ndarray:
        """Actions ``(N, A)`` float32 in the original units for ``Z (N, D)``, ``proprio (N, P)``."""
        X = self._inputs(Z, proprio)
        if self.kind == "ridge":
            Y = self.probe.predict(X)
        else:
            import torch
            with torch.no_grad():
                Y = self.module(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
        return (Y * self.action_scale + self.action_mean).astype(np.float32)

    def to_array(self) -> np.ndarray:
        """An MLP policy as one float64 vector (standardisers, then every weight), for a
        cache; :func:`policy_from_array` rebuilds it."""
        if self.kind != "mlp":
            raise MetricError(f"to_array needs an mlp policy, this one is {self.kind!r}")
        sizes = [self.n_embed, self.n_proprio, self.n_actions]
        hidden = [m.out_features for m in self.module if hasattr(m, "out_features")][:-1]
        weights = [t.detach().double().numpy().ravel() for t in self.module.state_dict().values()]
        return np.concatenate([[len(hidden)], hidden, sizes, self.x_mean, self.x_scale,
                               self.action_mean, self.action_scale, *weights])

    def as_linear(self) -> tuple[np.ndarray, np.ndarray]:
        """Ridge only: ``(W (D + P, A), b (A,))`` with ``[Z, proprio] @ W + b`` = actions."""
        if self.kind != "ridge":
            raise MetricError(f"as_linear needs a ridge policy, this one is {self.kind!r}")
        W, b = self.probe.as_linear()                       # on standardised inputs
        W_raw = W / self.x_scale[:, None] * self.action_scale
        b_raw = (b - (self.x_mean / self.x_scale) @ W) * self.action_scale + self.action_mean
        return W_raw, b_raw


@dataclass
class PolicyEnsemble:
    """MLP policies fitted on the same frames from other initialisations and episode splits,
    acting with their mean action (one MLP's fit varies a lot with its seed: the shared control
    reached 0.60-0.97 sim success over seeds, 0.97-1.00 as a mean of five, see
    :func:`s2r.closedloop.policy.two_stage.fit_state_control`).

    Attributes
    ----------
    members : list of Policy
        ``kind="mlp"`` policies with the same inputs and outputs.
    """

    members: list
    kind = "ensemble"

    def __post_init__(self):
        if not self.members:
            raise MetricError("a policy ensemble needs at least one member")

    @property
    def n_embed(self) -> int:
        return self.members[0].n_embed

    @property
    def n_proprio(self) -> int:
        return self.members[0].n_proprio

    @property
    def n_actions(self) -> int:
        return self.members[0].n_actions

    def predict(self, Z, proprio=None) -> np.ndarray:
        """The members' mean action ``(N, A)`` float32."""
        return np.mean([m.predict(Z, proprio) for m in self.members], axis=0).astype(np.float32)

    def to_array(self) -> np.ndarray:
        """``[-K, size of each member's vector, the K vectors]`` (:func:`policy_from_array`)."""
        parts = [m.to_array() for m in self.members]
        return np.concatenate([[-len(parts)], [p.size for p in parts], *parts])


def policy_from_array(vector):
    """The MLP :class:`Policy` (or :class:`PolicyEnsemble`, whose vector starts with minus
    its size) that ``to_array`` wrote."""
    import torch

    v = np.array(vector, dtype=np.float64)     # a copy: cached arrays are read-only
    if v.size and v[0] < 0:
        k = int(-v[0])
        sizes = [int(n) for n in v[1:1 + k]]
        if k < 1 or 1 + k + sum(sizes) != v.size:
            raise MetricError(f"not a policy ensemble vector: {v.size} numbers")
        bounds = np.cumsum([1 + k, *sizes])
        return PolicyEnsemble([policy_from_array(v[a:b])
                               for a, b in zip(bounds[:-1], bounds[1:])])
    n_hidden = int(v[0])
    hidden = [int(h) for h in v[1:1 + n_hidden]]
    n_embed, n_proprio, n_actions = (int(x) for x in v[1 + n_hidden:4 + n_hidden])
    pos = 4 + n_hidden
    n_in = n_embed + n_proprio
    parts = []
    for size in (n_in, n_in, n_actions, n_actions):
        parts.append(v[pos:pos + size])
        pos += size
    net = _mlp(n_in, hidden, n_actions)
    state = {}
    for key, t in net.state_dict().items():
        state[key] = torch.as_tensor(v[pos:pos + t.numel()].reshape(t.shape), dtype=torch.float32)
        pos += t.numel()
    if pos != v.size:
        raise MetricError(f"not a policy vector: {v.size} numbers, expected {pos}")
    net.load_state_dict(state)
    net.eval()
    return Policy(kind="mlp", n_embed=n_embed, n_proprio=n_proprio, n_actions=n_actions,
                  x_mean=parts[0], x_scale=parts[1], action_mean=parts[2],
                  action_scale=parts[3], module=net)


def _mlp(n_in: int, hidden, n_out: int, gen=None):
    """``Linear-ReLU-...-Linear``; torch's default init drawn from ``gen`` when given."""
    import torch

    widths = (n_in,) + tuple(int(h) for h in hidden) + (n_out,)
    layers = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        lin = torch.nn.Linear(a, b)
        if gen is not None:
            with torch.no_grad():  # torch's default init, drawn from our own generator
                bound = 1.0 / np.sqrt(a)
                lin.weight.copy_(torch.empty(b, a).uniform_(-bound, bound, generator=gen))
                lin.bias.copy_(torch.empty(b).uniform_(-bound, bound, generator=gen))
        layers.append(lin)
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def _standardiser(X: np.ndarray):
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
    return mean, scale


def fit_policy(Z, proprio, actions, episode=None, *, kind: str = "ridge", seed: int = 0,
               alpha: float = DEFAULT_PROBE_ALPHA, hidden: tuple = (256, 256),
               lr: float = 1e-3, batch_size: int = 128, max_epochs: int = 200,
               patience: int = 20, weight_decay: float = 0.0,
               val_fraction: float = 0.2) -> Policy:
    """Fit a behaviour-cloning policy from ``[Z, proprio]`` to ``actions``.

    Parameters
    ----------
    Z : array-like (N, D)
        Embeddings of the (sim) frames.
    proprio : array-like (N, P) or None
        Proprioception (a world task's :attr:`~s2r.worlds.base.TaskColumns.proprio` columns).
    actions : array-like (N, A)
    episode : array-like (N,) of int, optional
        Episode of each frame; required for ``kind="mlp"`` (held-out whole episodes).
    kind : {"ridge", "mlp"}
    seed : int
        Episode split, initialisation and batch order.
    alpha : float
        Ridge penalty of the probe (fraction of the standardised inputs' total variance).
    hidden, lr, batch_size, max_epochs, patience, weight_decay, val_fraction :
        MLP settings: hidden widths, Adam, stop after ``patience`` epochs without a better
        held-out loss, fraction of episodes held out.
    """
    check_choice("kind", kind, KINDS)
    check_number("seed", seed, low=0, integer=True)
    checked = check_embeddings(Z, actions=actions, episode=episode)
    Z, Y, ep = checked.Z, checked.actions, checked.episode
    P = _check_proprio(proprio, len(Z))
    X = np.concatenate([np.asarray(Z, dtype=np.float64), P], axis=1)
    common = dict(n_embed=Z.shape[1], n_proprio=P.shape[1], n_actions=Y.shape[1])
    if kind == "ridge":
        if alpha != float("inf"):
            check_number("alpha", alpha, low=0)
        x_mean, x_scale = _standardiser(X)
        probe = ActionProbe(alpha=alpha).fit((X - x_mean) / x_scale, Y)
        all_eps = np.unique(ep) if ep is not None else np.zeros(0, dtype=np.int64)
        return Policy(kind="ridge", x_mean=x_mean, x_scale=x_scale,
                      action_mean=probe.action_mean_, action_scale=probe.action_scale_,
                      probe=probe, train_episodes=all_eps, **common)
    if ep is None:
        raise MetricError("episode is required for kind='mlp' (early stopping holds out "
                          "whole episodes)")
    hidden = tuple(hidden) if isinstance(hidden, (tuple, list)) else (hidden,)
    if not hidden:
        raise MetricError("hidden must list at least one layer width")
    for h in hidden:
        check_number("hidden", h, low=1, integer=True)
    for name, v in (("batch_size", batch_size), ("max_epochs", max_epochs),
                    ("patience", patience)):
        check_number(name, v, low=1, integer=True)
    check_number("lr", lr, low=0, low_open=True)
    check_number("weight_decay", weight_decay, low=0)
    train, val = split_episodes(ep, val_fraction=val_fraction, seed=seed)
    x_mean, x_scale = _standardiser(X[train])
    y_mean, y_scale = _standardiser(Y[train])
    Xs, Ys = (X - x_mean) / x_scale, (Y - y_mean) / y_scale
    with one_torch_thread():       # the same fit whatever the machine's thread count
        module, best, tl, vl = _train_mlp(Xs[train], Ys[train], Xs[val], Ys[val],
                                          hidden=hidden, lr=lr, batch_size=batch_size,
                                          max_epochs=max_epochs, patience=patience,
                                          weight_decay=weight_decay, seed=seed)
    return Policy(kind="mlp", x_mean=x_mean, x_scale=x_scale, action_mean=y_mean,
                  action_scale=y_scale, module=module, best_epoch=best, epochs_run=len(tl),
                  train_loss=tl, val_loss=vl, train_episodes=np.unique(ep[train]),
                  val_episodes=np.unique(ep[val]), **common)


def _train_mlp(Xt, Yt, Xv, Yv, *, hidden, lr, batch_size, max_epochs, patience,
               weight_decay, seed):
    """Adam on mini-batches; returns (module at the best epoch, best epoch, losses)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    net = _mlp(Xt.shape[1], hidden, Yt.shape[1], gen)
    opt = torch.optim.Adam(net.parameters(), lr=float(lr), weight_decay=float(weight_decay))
    Xt_, Yt_ = torch.as_tensor(Xt, dtype=torch.float32), torch.as_tensor(Yt, dtype=torch.float32)
    Xv_, Yv_ = torch.as_tensor(Xv, dtype=torch.float32), torch.as_tensor(Yv, dtype=torch.float32)
    n, bs = len(Xt_), min(int(batch_size), len(Xt_))
    best_loss, best_epoch, best_state, since = np.inf, 0, None, 0
    train_loss, val_loss = [], []
    for epoch in range(1, int(max_epochs) + 1):
        net.train()
        perm = torch.randperm(n, generator=gen)
        total, batches = 0.0, 0
        for start in range(0, n, bs):
            idx = perm[start:start + bs]
            loss = torch.mean((net(Xt_[idx]) - Yt_[idx]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, batches = total + float(loss.detach()), batches + 1
        net.eval()
        with torch.no_grad():
            v = float(torch.mean((net(Xv_) - Yv_) ** 2))
        train_loss.append(total / batches)
        val_loss.append(v)
        if v < best_loss:
            best_loss, best_epoch, since = v, epoch, 0
            best_state = {k: t.detach().clone() for k, t in net.state_dict().items()}
        else:
            since += 1
            if since >= patience:
                break
    net.load_state_dict(best_state)
    net.eval()
    return net, best_epoch, np.asarray(train_loss), np.asarray(val_loss)
