"""One rate limiter, one concurrency cap and one budget for every Ray worker of a run.

N shards that pace themselves send N × the configured RPM and spend N × the budget. With Ray, the
run's :class:`Governor` is one actor that holds the target's :class:`RateLimiter` (RPM/TPM, GCRA,
Retry-After pauses), its concurrency cap (``Limits.max_concurrency`` model calls in flight across
all workers) and the run's :class:`BudgetTracker`. Each worker's :class:`ManagedTarget` gets two
proxies in place of its own:

* :class:`RemoteLimiter` (its ``_limiter``): ``acquire`` is one call to :meth:`Governor.admit`, which
  waits for a slot and the pacer and reserves the budget in the same step (one round trip per model
  call); ``pause_for`` (a 429's Retry-After) pauses every worker; ``reconcile``/``refund`` correct
  the TPM pacer;
* :class:`RemoteBudget` (its ``budget``): ``reserve`` hands out the grant that ``acquire`` just got
  for the same task, ``settle`` reports the call's tokens and cost and frees its slot.

The runtime calls ``acquire`` then ``reserve`` for every model call, a framework agent's own calls
included (:mod:`frontier_qa.runtime._gateway`), so the limits hold per model call whichever worker
makes it. A worker that dies leaves grants open: :meth:`Governor.forget` settles them as abandoned
calls (the server ran them: counted, with estimated tokens), which frees their slots.

The driver's other models (curriculum, judge) share the budget through a :class:`RemoteBudget`
with no limiter: their ``reserve`` asks the governor directly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

from frontier_qa.errors import BudgetExceededError, FrontierQAError, RunInterruptedError
from frontier_qa.runtime._budget import BudgetSnapshot, BudgetTracker, Reservation
from frontier_qa.runtime._limits import Budget, Limits
from frontier_qa.runtime._rate_limit import Pacer, RateLimiter

Answer = tuple[Any, ...]  # ("ok", grant id) or (error class name, message, hint): errors travel as data
_ERRORS: dict[str, type[BudgetExceededError]] = {
    "BudgetExceededError": BudgetExceededError, "RunInterruptedError": RunInterruptedError}


def granted(answer: Answer) -> Reservation:
    """The reservation in a governor's answer, or its refusal raised as the error it was."""
    if answer[0] == "ok":
        return Reservation(int(answer[1]))
    error = _ERRORS.get(answer[0], BudgetExceededError)
    raise error(str(answer[1]), hint=answer[2])


class Governor:
    """The run's limits for every worker (a Ray actor; a plain object in unit tests).

    Args:
        limits: the target's limits (``rpm``, ``tpm``, ``rpm_burst``, ``max_concurrency``).
        budget: the run's budget (calls, tokens, cost, wall time).
        idle_s: a shared (named) governor that hears nothing for this long ends itself, so a
            driver killed before it detached leaves no actor behind for ever; ``None``: never.
    """

    def __init__(self, limits: Limits, budget: Budget, *, idle_s: float | None = None) -> None:
        self.limits = limits
        self.limiter = RateLimiter(limits.rpm, limits.tpm, rpm_burst=limits.rpm_burst)
        self.budget = BudgetTracker(budget)
        self._slots: asyncio.Semaphore | None = None  # made in the actor's event loop
        # grant id -> (worker, estimated tokens, holds a slot, when granted)
        self._grants: dict[int, tuple[str, int, bool, float]] = {}
        self._attached = 0
        self._idle_s = idle_s
        self._last = time.monotonic()

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.max_concurrency)
        return self._slots

    async def admit(self, worker: str, tokens: int = 0) -> Answer:
        """Wait for a slot and the RPM/TPM pacer, then reserve one call of the budget."""
        arrived = self._last = time.monotonic()
        self._expire()
        slots = self._semaphore()
        await slots.acquire()
        try:
            if self.limiter.active:
                await self.limiter.acquire(tokens)
            reservation = self.budget.reserve()
        except FrontierQAError as err:
            slots.release()
            self.limiter.refund(tokens)
            return (type(err).__name__, err.message, err.hint)
        except BaseException:  # cancelled while waiting: the slot goes back
            slots.release()
            raise
        self._grants[reservation.id] = (worker, tokens, True, time.monotonic())
        return ("ok", reservation.id, time.monotonic() - arrived, self._interval())

    def _interval(self) -> float:
        """Seconds between two requests at the RPM limit (0: no limit)."""
        return 60.0 / self.limits.rpm if self.limits.rpm else 0.0

    async def readmit(self, grant: int) -> Answer:
        """Pace a granted call again: its grant reached the worker late (a stalled process), and sent
        now it would arrive right behind the calls granted after it. Keeps its slot and budget.
        """
        arrived = time.monotonic()
        if grant in self._grants and self.limiter.active:
            await self.limiter.acquire(0)
        return ("ok", grant, time.monotonic() - arrived, self._interval())

    def reserve(self, worker: str) -> Answer:
        """One call of the budget for a model that paces itself (the driver's curriculum, judge)."""
        self._last = time.monotonic()
        try:
            reservation = self.budget.reserve()
        except FrontierQAError as err:
            return (type(err).__name__, err.message, err.hint)
        self._grants[reservation.id] = (worker, 0, False, time.monotonic())
        return ("ok", reservation.id)

    def settle(self, grant: int, tokens: int = 0, cost_usd: float | None = None, estimated: bool = False) -> None:
        """A call ended (failed ones too): its tokens and cost count, its slot is free."""
        self._last = time.monotonic()
        held = self._grants.pop(grant, None)
        if held is None:
            return  # forgotten already (its worker was declared dead), or settled twice
        self.budget.settle(Reservation(grant), tokens=tokens, cost_usd=cost_usd, estimated=estimated)
        if held[2]:
            self._semaphore().release()

    def release(self, grant: int) -> None:
        """A grant that was never used for a call (its caller stopped first): nothing was spent."""
        held = self._grants.pop(grant, None)
        if held is None:
            return
        self.limiter.refund(held[1])
        self.budget.cancel(Reservation(grant))
        if held[2]:
            self._semaphore().release()

    def forget(self, worker: str) -> int:
        """Settle every open grant of a dead worker as an abandoned call; how many there were.

        Their requests may have reached the server, which bills them: they count as calls, with
        their estimated tokens (what :meth:`ManagedTarget` does for a call it abandons).
        """
        mine = [(grant, tokens) for grant, (owner, tokens, _, _) in self._grants.items() if owner == worker]
        for grant, tokens in mine:
            self.settle(grant, tokens, estimated=bool(tokens))
        return len(mine)

    def _expire(self) -> None:
        """A shared governor's grants older than any call can be (``Limits.timeout_s`` + 30 s): their
        driver was killed without a word (no one calls :meth:`forget` for it); abandoned calls.
        """
        timeout = self.limits.timeout_s
        if self._idle_s is None or timeout is None:
            return
        now = time.monotonic()
        for grant, (_, tokens, _, since) in list(self._grants.items()):
            if now - since > timeout + 30.0:
                self.settle(grant, tokens, estimated=bool(tokens))

    def open_grants(self, worker: str | None = None) -> int:
        """Grants not settled yet (of one worker, or of all)."""
        return sum(1 for owner, *_ in self._grants.values() if worker is None or owner == worker)

    def reconcile(self, estimated: int, actual: int) -> None:
        self.limiter.reconcile(estimated, actual)

    def pause_for(self, seconds: float) -> None:
        """A server's Retry-After: no worker starts a call for ``seconds``."""
        self.limiter.pause_for(seconds)

    def interrupt(self) -> None:
        """Ctrl-C on the driver: no worker starts a new call; calls in flight finish."""
        self.budget.interrupt()

    def snapshot(self) -> BudgetSnapshot:
        return self.budget.snapshot()

    def attach(self) -> int:
        """One more driver uses this governor (shards sharing it); how many do now."""
        self._attached += 1
        self._last = time.monotonic()
        return self._attached

    def detach(self) -> int:
        """A driver is done with it; how many still use it (0: the caller ends it)."""
        self._attached = max(0, self._attached - 1)
        return self._attached

    def idle_for(self) -> float:
        """Seconds since anything was asked of it."""
        return time.monotonic() - self._last

    async def watch_idle(self) -> None:
        """End this actor once no driver has used it for ``idle_s`` (a shared governor a killed driver left)."""
        if self._idle_s is None:
            return
        while True:
            await asyncio.sleep(min(self._idle_s, 30.0))
            if self.idle_for() >= self._idle_s and not self._grants:
                import ray

                ray.actor.exit_actor()


class RemoteLimiter:
    """A worker's :class:`RateLimiter` stand-in: every call is admitted by the run's governor.

    ``acquire`` keeps the governor's answer for the asyncio task that asked; the runtime's
    ``budget.reserve()`` (a :class:`RemoteBudget`) takes it in the same task right after. A grant
    its task never took (the task stopped in between) is given back on the next ``acquire``.
    """

    active = True  # the runtime always asks: the governor decides, whatever this worker saw

    def __init__(self, governor: Any, worker: str) -> None:
        self.governor = governor
        self.worker = worker
        self._answers: dict[asyncio.Task[Any], Answer] = {}
        self.late = 0  # grants that arrived late and were paced again
        self._pacer: Pacer | None = None

    async def acquire(self, tokens: int = 0) -> None:
        self.sweep()
        ref = self.governor.admit.remote(self.worker, tokens)
        for _ in range(3):  # a grant that keeps arriving late is used anyway
            sent = time.monotonic()
            try:
                answer: Answer = await ref
            except asyncio.CancelledError:
                ref.future().add_done_callback(self._give_back)  # granted after all: give it back
                raise
            # the way there and back, without the wait at the governor: more than a request interval
            # late, the call would land bunched with two later grants, past what a provider's burst
            # allowance forgives (the server's 429); re-paced it costs that one interval instead
            if answer[0] != "ok" or time.monotonic() - sent - answer[2] <= answer[3]:
                break
            self.late += 1
            ref = self.governor.readmit.remote(answer[1])
        if answer[0] == "ok" and answer[3]:
            await self._spaced(answer[3])
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - acquire always runs in a task
            self._give_back_answer(answer)
            return
        self._answers[task] = answer

    async def _spaced(self, interval: float) -> None:
        """Keep this worker's own sends an interval apart: grants the governor spaced can reach a busy
        worker together (its event loop was answering), and sent together they would bunch at the server.
        """
        if self._pacer is None or self._pacer.interval_s != interval:
            self._pacer = Pacer(1.0 / interval, 1)
        while (wait := self._pacer.admit()) > 0:
            await asyncio.sleep(wait)

    def take(self) -> Answer | None:
        """The answer ``acquire`` got for the current task (once), or ``None``."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return None
        return None if task is None else self._answers.pop(task, None)

    def sweep(self) -> None:
        """Give back grants of tasks that ended without reserving them."""
        for task in [t for t in self._answers if t.done()]:
            self._give_back_answer(self._answers.pop(task))

    def _give_back(self, future: concurrent.futures.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is None:
            self._give_back_answer(future.result())

    def _give_back_answer(self, answer: Answer) -> None:
        if answer[0] == "ok":
            self.governor.release.remote(answer[1])

    def reconcile(self, estimated: int, actual: int) -> None:
        if estimated or actual:
            self.governor.reconcile.remote(estimated, actual)

    def refund(self, estimated: int) -> None:
        self.reconcile(estimated, 0)

    def pause_for(self, seconds: float) -> None:
        self.governor.pause_for.remote(seconds)


class RemoteBudget(BudgetTracker):
    """The run's :class:`BudgetTracker` as one process sees it: every reservation is the governor's.

    Args:
        governor: the governor actor's handle.
        worker: who reserves (a worker's id, or ``"driver"``); a dead worker's grants are forgotten by it.
        budget: the run's budget (for :attr:`budget`, read by reports).
        limiter: the worker's :class:`RemoteLimiter`, whose admitted grants ``reserve`` hands out.
    """

    def __init__(self, governor: Any, worker: str, budget: Budget, limiter: RemoteLimiter | None = None) -> None:
        super().__init__(budget)
        self.governor = governor
        self.worker = worker
        self.limiter = limiter
        self._stopped = False

    def reserve(self) -> Reservation:
        answer = self.limiter.take() if self.limiter is not None else None
        if answer is None:
            answer = _get(self.governor.reserve.remote(self.worker))
        return granted(answer)

    def settle(self, reservation: Reservation, *, tokens: int = 0, cost_usd: float | None = None,
               estimated: bool = False) -> None:
        self.governor.settle.remote(reservation.id, int(tokens), cost_usd, estimated)

    def interrupt(self) -> None:
        self._stopped = True
        _get(self.governor.interrupt.remote())

    @property
    def interrupted(self) -> bool:
        return self._stopped

    @property
    def in_flight(self) -> int:
        return self.snapshot().in_flight

    def can_start(self) -> bool:
        left = self.snapshot().remaining().values()
        return not self._stopped and all(value is None or value > 0 for value in left)

    def snapshot(self) -> BudgetSnapshot:
        snap: BudgetSnapshot = _get(self.governor.snapshot.remote())
        return snap

    def __repr__(self) -> str:
        return f"RemoteBudget({self.worker!r})"


def _get(ref: Any) -> Any:
    import ray

    return ray.get(ref)


__all__ = ["Governor", "RemoteBudget", "RemoteLimiter", "granted"]
