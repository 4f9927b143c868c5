"""Sampling on a Ray cluster: the driver decides, Ray workers draw the samples.

``frontier-qa probe --ray ADDRESS`` (config ``ray.address``) runs the same probe as a local one:
the curriculum, validation, sequential decisions, the store, the reports and the gate stay in the
driver process. Only ``target.sample(case, n, start=s)`` scales out, through a driver-side
:class:`RayTarget` (a :class:`ManagedTarget` whose adapter is the pool of workers):

* **the driver owns the sample cache and its single flight.** Before a sample is sent anywhere the
  driver reads the cache and claims the misses (:meth:`SampleCache.acquire`, as a local run does);
  only claimed samples go to a worker, and what comes back is stored by the driver. So a sample is
  fetched once whichever worker draws it, a re-run or ``--resume`` replays it from the cache, and
  two drivers sharing a cache file (shards on one machine) still single-flight through its claims.
  Workers run with no cache of their own;
* **workers** (:class:`SampleWorker`, one Ray actor each, spread over the nodes) open the target
  from its spec and draw with their own :class:`ManagedTarget` (timeouts, retries, error
  classification), whose rate limiter and budget are the run's one :class:`Governor` actor
  (:mod:`frontier_qa.runtime._ray_limiter`): every model call of every worker is admitted there;
* **dispatch** sends each backend call to the live worker with the most free slots
  (``ray.slots`` per worker), so fast workers take more and the global limiter, not a static
  split, decides the pace;
* **a worker that dies** (node lost, OOM, ``kill -9``) fails the calls it held with
  :class:`WorkerLost`, a transient error: the driver's runtime retries each on another worker.
  Samples it finished were already returned; its grants are settled at the governor as abandoned
  calls (counted, since the server may have billed them). Re-paid: at most its calls in flight;
* **the driver's death** takes its workers with it (Ray ends a job's actors); everything
  classified is in the store and every returned sample in the cache, so ``--resume`` continues;
* **Ctrl-C** interrupts the run's budget, which is the governor's: no worker starts a new call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from frontier_qa import errors
from frontier_qa._optional import require
from frontier_qa.errors import ConfigError, FrontierQAError, TargetUnavailableError
from frontier_qa.redaction import secret_values
from frontier_qa.runtime._budget import BudgetTracker
from frontier_qa.runtime._cache import SampleCache
from frontier_qa.runtime._limits import Backoff, Budget, Limits
from frontier_qa.runtime._managed import ManagedTarget, RuntimeStats
from frontier_qa.runtime._ray_limiter import Governor, RemoteBudget, RemoteLimiter
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory

log = logging.getLogger(__name__)

NAMESPACE = "frontier-qa"
PURPOSE = "Probing on a Ray cluster (--ray / ray.address)"


@dataclass(frozen=True)
class RaySettings:
    """How a probe uses a Ray cluster (config: the ``ray`` section).

    Attributes:
        address: the cluster (``auto``, ``HOST:6379``, ``ray://HOST:10001``).
        workers: sampling workers (Ray actors), spread over the nodes.
        slots: backend calls each worker runs at once: one number for all, or one per worker
            (nodes of different sizes); default ``Limits.max_concurrency``.
        cpus_per_worker: CPUs Ray reserves for each worker (local models need them; API targets 0.25).
        limiter: a name: drivers that give the same one (CI shards) share one rate limiter and
            one budget on the cluster; ``None``: this run's own.
    """

    address: str
    workers: int = 2
    slots: int | tuple[int, ...] | None = None
    cpus_per_worker: float = 1.0
    limiter: str | None = None

    def slots_of(self, limits: Limits) -> list[int]:
        """Each worker's slots."""
        if isinstance(self.slots, tuple):
            if len(self.slots) != self.workers:
                raise ConfigError(f"ray.slots lists {len(self.slots)} workers but ray.workers is {self.workers}",
                                  hint="give one number per worker, or one number for all")
            return list(self.slots)
        return [self.slots or limits.max_concurrency] * self.workers


@dataclass(frozen=True)
class TargetRecipe:
    """What a worker needs to open the target itself (a target is not sent; its spec is)."""

    spec: str
    options: Mapping[str, Any] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    budget: Budget = field(default_factory=Budget)
    version: str | None = None
    cwd: str = ""  # the driver's folder: relative paths in the spec (python: FILE.py) resolve the same


class WorkerLost(Exception):
    """A Ray worker died (or became unreachable) while it held a call: retried on another worker."""


# --- the worker (a Ray actor) -------------------------------------------------------------


class SampleWorker:
    """Draws samples of the run's target on one Ray worker (wrapped by :func:`ray.remote` lazily)."""

    def __init__(self, worker: str, recipe: TargetRecipe, governor: Any) -> None:
        self.worker = worker
        self.recipe = recipe
        self.governor = governor
        self._target: ManagedTarget | None = None
        if recipe.cwd and os.path.isdir(recipe.cwd):  # a local cluster shares the driver's files
            os.chdir(recipe.cwd)
            if recipe.cwd not in sys.path:
                sys.path.insert(0, recipe.cwd)

    def _open(self) -> ManagedTarget:
        """The target, opened on first use (synchronously: two calls never open it twice)."""
        if self._target is None:
            from frontier_qa.runtime._from_spec import open_target

            r = self.recipe
            limiter = RemoteLimiter(self.governor, self.worker)
            budget = RemoteBudget(self.governor, self.worker, r.budget, limiter)
            target = open_target(r.spec, limits=r.limits, budget=budget, cache=False, version=r.version,
                                 **dict(r.options))
            if not isinstance(target, ManagedTarget):
                raise ConfigError(f"{r.spec!r} cannot be sampled on Ray workers",
                                  hint="tools+ targets run their tool loop in the driver; probe them without --ray")
            target._limiter = limiter  # type: ignore[assignment]  # the governor paces every worker
            self._target = target
        return self._target

    async def info(self) -> dict[str, Any]:
        """The target as the driver needs to know it: id, versions, batch size, this worker's pid."""
        try:
            target = self._open()
        except FrontierQAError as err:
            return {"error": (type(err).__name__, err.message, err.hint)}
        except Exception as err:  # noqa: BLE001 - reported to the driver as what it is, not a Ray traceback
            return {"error": ("ConfigError", f"the target failed to open on a Ray worker: {type(err).__name__}: "
                                             f"{err}", "check that every node has the target's packages and files")}
        adapter = target.adapter
        return {"id": target.id, "adapter_version": adapter.version(), "max_n": adapter.max_n,
                "supports_prefill": adapter.supports_prefill,
                "stops_after_code": bool(getattr(adapter, "stops_after_code", False)),
                "pid": os.getpid()}

    async def sample(self, case: Case, n: int, sampling: Sampling, start: int) -> tuple[Any, ...]:
        """``("ok", trajectories, stats)`` or ``("error", class name, message, hint, stats)``."""
        target = self._open()
        try:
            got = await target.sample(case, n, sampling, start=start)
        except FrontierQAError as err:
            return ("error", type(err).__name__, err.message, err.hint, asdict(target.stats()))
        return ("ok", got, asdict(target.stats()))

    async def close(self) -> None:
        if self._target is not None:
            await self._target.aclose()


# --- the driver's side ----------------------------------------------------------------------


@dataclass
class _Worker:
    id: str
    handle: Any
    slots: int
    busy: int = 0
    alive: bool = True
    pid: int = 0
    stats: dict[str, Any] = field(default_factory=dict)


class RayWorkers(Adapter):
    """The pool of sampling workers, as the driver's adapter: one ``generate`` runs on one worker.

    ``calls_elsewhere``: the workers' runtime admits, paces, budgets and retries each model call,
    so the driver's :class:`ManagedTarget` adds only the cache, single flight, and re-dispatch of
    the calls a dead worker held.
    """

    calls_elsewhere = True
    in_process = False

    def __init__(self, workers: Sequence[_Worker], governor: Any, info: Mapping[str, Any]) -> None:
        self.workers = list(workers)
        self.governor = governor
        self.id = str(info["id"])
        self.max_n = int(info["max_n"])
        self.supports_prefill = bool(info["supports_prefill"])
        self.stops_after_code = bool(info["stops_after_code"])
        self._version = info.get("adapter_version")
        self._free: asyncio.Condition | None = None
        self.lost = 0  # workers declared dead

    def version(self) -> str | None:
        return None if self._version is None else str(self._version)

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        worker = await self._pick()
        ray = require("ray", extra="ray", purpose=PURPOSE)
        ref = worker.handle.sample.remote(case, n, sampling, start)
        try:
            answer = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        except ray.exceptions.RayTaskError as err:  # a bug in the worker's code, not a lost worker
            raise RuntimeError(f"Ray worker {worker.id} failed: {err}") from None
        except ray.exceptions.RayError as err:
            self._lose(worker, err)
            raise WorkerLost(f"Ray worker {worker.id} (pid {worker.pid}) was lost: {type(err).__name__}") from None
        finally:
            await self._done(worker)
        worker.stats = _newer(worker.stats, answer[-1])
        if answer[0] == "error":
            raise rebuilt(str(answer[1]), str(answer[2]), answer[3])
        got: list[Trajectory] = answer[1]
        return got

    def classify(self, exc: BaseException) -> ErrorClass:
        if isinstance(exc, WorkerLost):
            return ErrorClass(ErrorKind.TRANSIENT, str(exc))
        return ErrorClass(ErrorKind.FATAL, f"{type(exc).__name__}: {exc}")

    async def _pick(self) -> _Worker:
        """The live worker with the most free slots (waits while every one is full)."""
        if self._free is None:
            self._free = asyncio.Condition()
        async with self._free:
            while True:
                live = [w for w in self.workers if w.alive]
                if not live:
                    raise TargetUnavailableError(
                        f"every Ray worker of the run was lost ({self.lost} of {len(self.workers)})",
                        hint="check the cluster (ray status), then continue with --resume: finished samples are "
                             "cached and classified cases stored")
                free = [w for w in live if w.busy < w.slots]
                if free:
                    worker = max(free, key=lambda w: (w.slots - w.busy, w.slots))
                    worker.busy += 1
                    return worker
                await self._free.wait()

    async def _done(self, worker: _Worker) -> None:
        worker.busy -= 1
        if self._free is not None:
            async with self._free:
                self._free.notify_all()

    def _lose(self, worker: _Worker, err: BaseException) -> None:
        if not worker.alive:
            return
        worker.alive = False
        self.lost += 1
        log.warning("Ray worker %s (pid %d) was lost (%s); its calls in flight go to the other workers",
                    worker.id, worker.pid, type(err).__name__)
        self.governor.forget.remote(worker.id)  # its open grants: abandoned calls, slots freed

    def stats(self) -> RuntimeStats:
        """The workers' runtime statistics, summed (a lost worker's as last reported)."""
        total: dict[str, Any] = {f.name: 0 for f in fields(RuntimeStats)}
        total["cost_usd"] = None
        for worker in self.workers:
            for name, value in worker.stats.items():
                if name == "cost_usd":
                    if value is not None:
                        total[name] = (total[name] or 0.0) + value
                elif name in total:
                    total[name] += value
        return RuntimeStats(**total)

    async def aclose(self) -> None:
        ray = require("ray", extra="ray", purpose=PURPOSE)
        for worker in self.workers:
            if worker.alive:
                try:
                    await asyncio.wait_for(worker.handle.close.remote(), timeout=10)
                except (asyncio.TimeoutError, ray.exceptions.RayError):
                    pass
            ray.kill(worker.handle, no_restart=True)
        self.workers = [replace(w, alive=False) for w in self.workers]


def rebuilt(name: str, message: str, hint: str | None, *,
            default: type[FrontierQAError] = errors.TargetError) -> FrontierQAError:
    """The error a worker reported as data (class name, message, hint), as that class where it can be."""
    error = getattr(errors, name, None)
    if isinstance(error, type) and issubclass(error, FrontierQAError):
        try:
            return error(message, hint=hint)
        except TypeError:  # a class with arguments of its own (MissingExtraError)
            pass
    return default(message, hint=hint)


def _newer(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Cumulative counters from a worker, replies arriving out of order: the larger of each."""
    if not old:
        return dict(new)
    return {k: (v if old.get(k) is None else max(old[k], v) if v is not None else old[k]) for k, v in new.items()}


class RayTarget(ManagedTarget):
    """The driver's target: cache and single flight here, the draws on Ray workers.

    :meth:`stats` counts the workers' calls, retries and tokens with the driver's cache hits;
    :meth:`snapshot` is the governor's budget (every worker's spending).
    """

    adapter: RayWorkers

    def stats(self) -> RuntimeStats:
        mine, theirs = super().stats(), self.adapter.stats()
        return replace(theirs, samples=mine.samples, cached=mine.cached, shared=mine.shared,
                       failed_samples=theirs.failed_samples + mine.failed_samples)

    async def aclose(self) -> None:
        await super().aclose()
        detach_governor(self.adapter.governor)


# --- opening ------------------------------------------------------------------------------


def _unreachable(address: str, timeout_s: float = 3.0) -> str | None:
    """Why a ``HOST:PORT`` cluster address takes no connection (``None``: it does, or the address is
    ``auto``, ``ray://…`` or another form Ray resolves itself). Ray's own ``init`` retries an unreachable
    GCS for minutes with warnings; a refused port is said at once instead.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or "://" in address or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    return None


def connect(address: str) -> Any:
    """The ``ray`` module, connected to ``address`` (once per process)."""
    ray = require("ray", extra="ray", purpose=PURPOSE)
    if not ray.is_initialized():
        refused = _unreachable(address)
        if refused is not None:
            raise ConfigError(f"cannot reach the Ray cluster at {address!r}: {refused}",
                              hint="start one (ray start --head --port PORT) or give its address: --ray HOST:6379, "
                                   "ray.address in the config")
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise ConfigError(f"cannot reach the Ray cluster at {address!r}: {err}",
                              hint="start one (ray start --head) or give its address: --ray HOST:6379, "
                                   "ray.address in the config") from None
    return ray


def start_governor(address: str, limits: Limits, budget: Budget, *, shared: str | None = None) -> Any:
    """The run's governor actor: a new one, or (``shared``) the named one drivers share, made if absent."""
    ray = connect(address)
    actor = ray.remote(num_cpus=0, max_concurrency=10_000)(Governor)
    if shared:
        handle = actor.options(name=f"governor:{shared}", lifetime="detached", get_if_exists=True).remote(
            limits, budget, idle_s=600.0)
    else:
        handle = actor.remote(limits, budget)
    if ray.get(handle.attach.remote()) == 1 and shared:
        handle.watch_idle.remote()
    return handle


def detach_governor(governor: Any) -> None:
    """This driver is done with the governor; the last one ends it."""
    ray = require("ray", extra="ray", purpose=PURPOSE)
    try:
        if ray.get(governor.detach.remote(), timeout=10) == 0:
            ray.kill(governor, no_restart=True)
    except ray.exceptions.RayError:
        pass


class GovernedTarget(ManagedTarget):
    """A target sampled in this process whose calls a governor on the cluster admits (``ray.workers: 0``)."""

    def __init__(self, adapter: Adapter, limits: Limits, budget: RemoteBudget, cache: SampleCache | None, *,
                 governor: Any, secrets: Sequence[str] = (), version: str | None = None) -> None:
        super().__init__(adapter, limits, budget, cache, secrets=secrets, version=version)
        self.governor = governor
        self._limiter = budget.limiter  # type: ignore[assignment]  # every call is admitted by the governor

    async def aclose(self) -> None:
        await super().aclose()
        detach_governor(self.governor)


def open_governed_target(spec: str, settings: RaySettings, *, limits: Limits, budget: Budget,
                         cache: SampleCache | None, version: str | None = None,
                         options: Mapping[str, Any] | None = None) -> GovernedTarget:
    """The target sampled in this process but admitted by a governor on the cluster: CI shards
    naming one ``ray.limiter`` share its RPM, concurrency cap and budget.
    """
    from frontier_qa.adapters import create_adapter

    if spec.startswith("tools+"):
        raise ConfigError(f"{spec!r} cannot share a limiter on Ray", hint="drop ray.limiter for tools+ targets")
    options = dict(options or {})
    adapter = create_adapter(spec, **options)
    governor = start_governor(settings.address, limits, budget, shared=settings.limiter)
    me = f"driver-{os.getpid()}-{os.urandom(3).hex()}"
    tracker = RemoteBudget(governor, me, budget, RemoteLimiter(governor, me))
    return GovernedTarget(adapter, limits, tracker, cache, governor=governor, secrets=secret_values(options),
                          version=version)


def open_ray_target(spec: str, settings: RaySettings, *, limits: Limits, budget: Budget,
                    cache: SampleCache | None, version: str | None = None, options: Mapping[str, Any] | None = None,
                    governor: Any = None) -> RayTarget:
    """Start the workers and return the driver's target (see the module docstring).

    Args:
        spec: the target spec, opened by every worker.
        settings: the ``ray`` section.
        limits: the target's limits, enforced across all workers by the governor.
        budget: the run's budget (the governor's, unless ``governor`` is given).
        cache: the driver's sample cache (``None``: no cache).
        version: the configured target version.
        options: adapter options (resolved; secret ones are masked here as in a local run).
        governor: a governor handle already started (:func:`start_governor`); default: a new one.
    """
    if spec.startswith("tools+"):
        raise ConfigError(f"{spec!r} cannot be sampled on Ray workers: the tool loop runs in one process",
                          hint="probe tools+ targets without --ray (or shard them: --shard i/n)")
    ray = connect(settings.address)
    options = dict(options or {})
    governor = governor or start_governor(settings.address, limits, budget, shared=settings.limiter)
    recipe = TargetRecipe(spec, options, limits, budget, version, os.getcwd())
    remote = ray.remote(num_cpus=settings.cpus_per_worker, max_restarts=0)(SampleWorker)
    pool: list[_Worker] = []
    for i, slots in enumerate(settings.slots_of(limits)):
        handle = remote.options(max_concurrency=max(slots, 1) + 4, scheduling_strategy="SPREAD").remote(
            f"w{i}", recipe, governor)
        pool.append(_Worker(f"w{i}", handle, slots))
    infos = ray.get([w.handle.info.remote() for w in pool])
    for worker, info in zip(pool, infos, strict=True):
        if "error" in info:
            for w in pool:
                ray.kill(w.handle, no_restart=True)
            detach_governor(governor)
            raise rebuilt(*info["error"], default=ConfigError)
        worker.pid = int(info["pid"])
    adapter = RayWorkers(pool, governor, infos[0])
    # the driver re-dispatches what a lost worker held; each worker times out and retries its own calls
    driver_limits = Limits(max_concurrency=sum(w.slots for w in pool), timeout_s=None, local_timeout_s=None,
                           slow_call_s=None, max_retries=max(3, len(pool)),
                           backoff=Backoff(initial_s=0.05, max_s=1.0, jitter_s=0.05),
                           max_consecutive_failures=limits.max_consecutive_failures)
    tracker: BudgetTracker = RemoteBudget(governor, "driver", budget)
    return RayTarget(adapter, driver_limits, tracker, cache, secrets=secret_values(options), version=version)


__all__ = ["RaySettings", "RayTarget", "RayWorkers", "SampleWorker", "TargetRecipe", "WorkerLost",
           "GovernedTarget", "connect", "detach_governor", "open_governed_target", "open_ray_target", "start_governor"]
