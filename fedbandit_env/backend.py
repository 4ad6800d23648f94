"""Where the vector core's arrays live: NumPy (the default and the replay reference) or
torch tensors on any torch device (a GPU, or the CPU for tests).

The vector env, its routing and the learner's wrappers are written once against the
array API standard (through ``array-api-compat``): every array operation goes through
``backend.xp``, the namespace of the arrays, so the same lines step NumPy arrays and
torch tensors. What the standard does not say is here, one function per need:

- :meth:`Backend.add_at` (``x[index] += values`` with distinct indices: pull counts);
- :meth:`Backend.asarray`, :meth:`Backend.zeros`, :meth:`Backend.to_numpy`: arrays on the
  backend's device, and back to NumPy for a caller that wants it;
- :class:`DeviceStream`: the random numbers a device draws itself (reward noise, gossip
  edges, privacy noise) from one seeded ``torch.Generator`` on the device.

Randomness is where the two paths differ, by design: on NumPy every env draws from its
own ``numpy.random.Generator`` in the order the PettingZoo env draws (so env ``b`` replays
the PettingZoo env reset with ``seed + b``, bit for bit); on a torch device the numbers
come from the device's generator (drawing them on the host would cost a copy a step).
The *instances* are the same draw on both (drawn on the host from the same seeds, then
moved), and ``tests/vector/test_device.py`` shows that fixed policies' regret
distributions agree between the two.

Examples:
    >>> be = backend(None)
    >>> be.name, be.device
    ('numpy', None)
    >>> x = be.zeros((2, 3))
    >>> be.add_at(x, (np.array([0, 1]), np.array([2, 2])), np.array([1.0, 5.0]))
    >>> x.tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.0, 5.0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEVICES = ("numpy", "cpu", "cuda", "auto")
"""The names ``device=`` takes besides a torch device string such as ``"cuda:1"``:
``None`` or ``"numpy"``: NumPy arrays; ``"cpu"``, ``"cuda"``: torch tensors there;
``"auto"``: torch on a GPU if one is visible, else NumPy."""


def _torch() -> Any:
    from fedbandit_env.extras import require

    return require("torch", "rl", "arrays on a torch device")


@dataclass(frozen=True, eq=False)
class Backend:
    """An array namespace and a device (see the module docstring); made by :func:`backend`.

    Attributes:
        name: ``"numpy"`` or ``"torch"``.
        device: The torch device (``None`` for NumPy).
        xp: The array API namespace (``array_api_compat.numpy`` or ``.torch``).

    Examples:
        >>> be = backend("numpy")
        >>> be.xp.sum(be.asarray([1.0, 2.0])).item()
        3.0
    """

    name: str
    device: Any
    xp: Any
    _torch: Any = field(default=None, repr=False)

    @property
    def is_numpy(self) -> bool:
        """Whether arrays are NumPy's (the replay reference).

        Examples:
            >>> backend(None).is_numpy
            True
        """
        return self.name == "numpy"

    @property
    def label(self) -> str:
        """``"numpy"``, or the torch device's name (``"cpu"``, ``"cuda:0"``).

        Examples:
            >>> backend(None).label
            'numpy'
        """
        return "numpy" if self.is_numpy else str(self.device)

    # ------------------------------------------------------------------ dtypes
    @property
    def float32(self) -> Any:
        """The namespace's float32."""
        return self.xp.float32

    @property
    def float64(self) -> Any:
        """The namespace's float64."""
        return self.xp.float64

    @property
    def int64(self) -> Any:
        """The namespace's int64."""
        return self.xp.int64

    @property
    def int8(self) -> Any:
        """The namespace's int8."""
        return self.xp.int8

    @property
    def boolean(self) -> Any:
        """The namespace's boolean dtype."""
        return self.xp.bool

    def dtype(self, dtype: Any) -> Any:
        """The namespace's dtype of a NumPy dtype (``np.float32`` -> ``torch.float32``).

        Examples:
            >>> backend("cpu").dtype(np.int8)
            torch.int8
        """
        if self.is_numpy:
            return np.dtype(dtype)
        name = np.dtype(dtype).name
        return getattr(self._torch, "bool" if name == "bool" else name)

    # ------------------------------------------------------------------ arrays
    def asarray(self, x: Any, dtype: Any = None) -> Any:
        """``x`` as an array of this backend, on its device (no copy where none is needed).

        Examples:
            >>> backend(None).asarray([1, 2], dtype=np.float32).dtype
            dtype('float32')
        """
        if self.is_numpy:
            if dtype is not None:
                return np.asarray(self.to_numpy(x), dtype=dtype)
            return np.asarray(self.to_numpy(x))
        th = self._torch
        if isinstance(x, th.Tensor):
            out = x if x.device == self.device else x.to(self.device)
            return out if dtype is None or out.dtype == dtype else out.to(dtype)
        array = np.asarray(x)
        if not array.flags.writeable:  # torch wants memory it may write
            array = array.copy()
        return th.as_tensor(array, dtype=dtype, device=self.device)

    def zeros(self, shape: tuple[int, ...], dtype: Any = None) -> Any:
        """Zeros of ``shape`` (float64 unless ``dtype``) on the device."""
        dtype = self.float64 if dtype is None else dtype
        if self.is_numpy:
            return np.zeros(shape, dtype=dtype)
        return self._torch.zeros(shape, dtype=dtype, device=self.device)

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any = None) -> Any:
        """``value`` everywhere in ``shape`` (float64 unless ``dtype``).

        Examples:
            >>> backend(None).full((2,), 3, np.int64).tolist()
            [3, 3]
        """
        dtype = self.float64 if dtype is None else dtype
        if self.is_numpy:
            return np.full(shape, value, dtype=dtype)
        return self._torch.full(shape, value, dtype=dtype, device=self.device)

    def arange(self, n: int, dtype: Any = None) -> Any:
        """``0 .. n - 1`` (int64 unless ``dtype``) on the device."""
        return self.xp.arange(n, dtype=self.int64 if dtype is None else dtype, device=self.device)

    def to_numpy(self, x: Any) -> np.ndarray:
        """Any array (a tensor on any device included) as a NumPy array.

        Examples:
            >>> backend(None).to_numpy([1, 2]).tolist()
            [1, 2]
        """
        if isinstance(x, np.ndarray):
            return x
        if hasattr(x, "detach"):  # a torch tensor
            return np.asarray(x.detach().cpu().numpy())
        return np.asarray(x)

    def owns(self, x: Any) -> bool:
        """Whether ``x`` is an array of this backend (a tensor on its device for torch).

        Examples:
            >>> backend(None).owns(np.zeros(1)), backend(None).owns([0])
            (True, False)
        """
        if self.is_numpy:
            return isinstance(x, np.ndarray)
        return isinstance(x, self._torch.Tensor) and x.device == self.device

    def add_at(self, target: Any, index: tuple[Any, ...], values: Any) -> None:
        """``target[index] += values`` in place, ``index`` a tuple of integer arrays
        naming *distinct* cells (each agent's pulled arm: one cell per row)."""
        target[index] += values

    def astype(self, x: Any, dtype: Any) -> Any:
        """A copy of ``x`` in ``dtype``: the namespace's ``astype``, without its device
        check on NumPy (about a microsecond a call: the steps of small batches make
        several).

        Examples:
            >>> backend(None).astype(np.arange(2), np.float32).dtype
            dtype('float32')
        """
        return x.astype(dtype) if self.name == "numpy" else self.xp.astype(x, dtype)

    def copy(self, x: Any) -> Any:
        """A copy of ``x`` (``np.copy`` / ``Tensor.clone``)."""
        return x.copy() if self.is_numpy else x.clone()

    def stream(self, seed: int | None = None) -> DeviceStream:
        """A :class:`DeviceStream` on this backend's device (torch only).

        Raises:
            ValueError: On NumPy (its draws come from the envs' own generators).
        """
        if self.is_numpy:
            raise ValueError("NumPy arrays draw from each env's own numpy Generator")
        return DeviceStream(self, seed)


class DeviceStream:
    """Random numbers drawn on a torch device from one seeded ``torch.Generator``: the
    reward noise, gossip edges and privacy noise of the device path (module docstring).

    Args:
        backend: A torch :class:`Backend`.
        seed: The generator's seed (``None``: from the OS).

    Examples:
        >>> import torch
        >>> s = backend("cpu").stream(0)
        >>> u = s.uniform((2, 3))
        >>> u.shape, u.dtype, bool(((u >= 0) & (u < 1)).all())
        (torch.Size([2, 3]), torch.float64, True)
        >>> s.seed(0); bool((s.uniform((2, 3)) == u).all())
        True
    """

    def __init__(self, backend: Backend, seed: int | None = None) -> None:
        self.backend = backend
        th = backend._torch
        self.generator = th.Generator(device=backend.device)
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        """Restart the generator from ``seed`` (``None``: fresh OS entropy)."""
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
        self.generator.manual_seed(int(seed) & ((1 << 63) - 1))

    def uniform(self, shape: tuple[int, ...]) -> Any:
        """Uniforms on ``[0, 1)``, float64."""
        th = self.backend._torch
        return th.rand(shape, generator=self.generator, device=self.backend.device,
                       dtype=th.float64)  # fmt: skip

    def normal(self, shape: tuple[int, ...]) -> Any:
        """Standard normals, float64."""
        th = self.backend._torch
        return th.randn(shape, generator=self.generator, device=self.backend.device,
                        dtype=th.float64)  # fmt: skip

    def laplace(self, scale: float, shape: tuple[int, ...]) -> Any:
        """Laplace noise of ``scale`` (inverse CDF of a uniform on ``(-1/2, 1/2)``,
        redrawn nowhere: a uniform of exactly 0 maps to the largest finite value).

        Examples:
            >>> x = backend("cpu").stream(1).laplace(2.0, (200_000,))
            >>> abs(float(x.abs().mean()) - 2.0) < 0.05
            True
        """
        th = self.backend._torch
        u = self.uniform(shape) - 0.5
        tiny = th.finfo(th.float64).tiny
        return -scale * th.sign(u) * th.log((1.0 - 2.0 * u.abs()).clamp_min(tiny))

    def integers(self, high: int, shape: tuple[int, ...]) -> Any:
        """Uniform integers in ``[0, high)``, int64."""
        th = self.backend._torch
        return th.randint(int(high), shape, generator=self.generator, device=self.backend.device)


def seed_of(seeds: list[int | None]) -> int | None:
    """One 63-bit seed for a device generator from the envs' seeds (``None`` when no env
    is seeded: the generator goes on).

    Examples:
        >>> seed_of([None, None]) is None, seed_of([0, 1]) == seed_of([0, 1]) != seed_of([1, 2])
        (True, True)
    """
    if all(s is None for s in seeds):
        return None
    words = [0 if s is None else int(s) + 1 for s in seeds]
    state = np.random.SeedSequence([len(words), *words]).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


def backend(device: Any = None) -> Backend:
    """The backend of ``device``: ``None`` / ``"numpy"`` (NumPy), a torch device or its
    name (``"cpu"``, ``"cuda"``, ``"cuda:1"``), or ``"auto"`` (a GPU where torch sees one,
    else NumPy).

    Raises:
        ValueError: For a device torch does not know, or a GPU that is not there.

    Examples:
        >>> backend("numpy").name, backend("cpu").label
        ('numpy', 'cpu')
        >>> backend("tpu")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: device must be None, 'numpy', 'auto' or a torch device (...), got 'tpu'
    """
    if isinstance(device, Backend):
        return device
    if device is None or device == "numpy":
        import array_api_compat.numpy as xp_numpy

        return Backend("numpy", None, xp_numpy)
    if device == "auto":
        try:
            import torch
        except ImportError:
            return backend(None)
        return backend("cuda") if torch.cuda.is_available() else backend(None)
    th = _torch()
    try:
        dev = th.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            "device must be None, 'numpy', 'auto' or a torch device ('cpu', 'cuda', "
            f"'cuda:1'), got {device!r}"
        ) from err
    if dev.type == "cuda" and not th.cuda.is_available():
        raise ValueError(f"device {device!r}: torch sees no CUDA GPU on this machine")
    if dev.type == "cuda" and dev.index is None:
        dev = th.device("cuda", th.cuda.current_device())
    import array_api_compat.torch as xp_torch

    return Backend("torch", dev, xp_torch, th)


def blas_threads(limit: int = 1) -> Any:
    """A context in which NumPy's BLAS runs on ``limit`` threads (``threadpoolctl``).

    The array policies multiply small matrices (a learned reference's layers: a few
    thousand rows of 10 x 32) many times a trial; OpenBLAS splits each over every core,
    and with anything else running that costs ten times the work (measured: 300 against
    30 microseconds a call with the other core busy). The runner evaluates policies
    inside this context, as it sets torch's thread count.

    Examples:
        >>> with blas_threads(1):
        ...     float((np.ones((2, 2)) @ np.ones((2, 2)))[0, 0])
        2.0
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=limit, user_api="blas")


def array_backend(x: Any) -> Backend:
    """The backend that holds ``x`` (NumPy for anything that is not a torch tensor).

    Examples:
        >>> array_backend(np.zeros(2)).name
        'numpy'
    """
    if type(x).__module__.startswith("torch"):
        return backend(x.device)
    return backend(None)


__all__ = [
    "DEVICES",
    "Backend",
    "DeviceStream",
    "array_backend",
    "backend",
    "blas_threads",
    "seed_of",
]
