"""A single-threaded executor that hands messages and timer expiries to their callbacks directly.

rclpy's ``SingleThreadedExecutor`` wraps every callback in a ``Task`` (a coroutine, a lock, two
guard-condition triggers that wake the next wait at once) and rebuilds its wait set through a
generator: about 0.1 ms of Python per callback, twice per control tick here (joint state and
odometry) and again in every consumer. ``DirectExecutor`` waits on the same rcl wait set (every
subscription, timer, service, client, guard condition and waitable of its nodes) and then:

- ready **subscriptions** with plain (non-``async``) callbacks: takes the message and calls the
  callback in place (with the ``MessageInfo`` if the callback asked for it);
- ready **timers** with plain callbacks: calls the timer (rcl updates its next call time) and
  the callback (with a ``TimerInfo`` if a parameter is annotated so, as rclpy does);
- ready **services** whose callback offers a deferred form (``callback.deferred``, see
  ``ros/requests.py``): takes the request and calls ``callback.deferred(request, header,
  service)``, which answers later, from any thread, with ``service.send_response``: the
  executor thread neither computes nor serializes the answer;
- anything else ready (services, clients, waitables such as QoS events, user guard conditions,
  tasks, ``async`` callbacks): hands over to ``SingleThreadedExecutor``'s own path, unchanged.

QoS event handlers (``rclpy.event_handler.EventHandler``: incompatible QoS, deadline, liveliness,
lost messages, matched), one or two per publisher and subscription (20 on the linearizer node),
are polled rather than waited on: they join the wait at most every ``EVENT_POLL_S`` (their
callbacks run within that time of the event), the other waits leave them out. Adding them and
asking each whether it is ready costs ~30 µs of Python per wait, which every message paid.

Callback semantics are rclpy's: one callback at a time, in the spinning thread, and an exception
raised by a callback propagates out of ``spin``/``spin_once``. Used by ``linearizer_node``
(``--executor rclpy`` selects the stock executor); see docs/performance.md, "Node latency".
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
import inspect
import threading
import time
from typing import Any

from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.signals import SignalHandlerGuardCondition
from rclpy.subscription import Subscription
from rclpy.utilities import timeout_sec_to_nsec

from rbd_linearizer.ros.log_throttle import LogThrottle

try:  # rclpy >= 8 (Kilted): a timer callback may ask for a TimerInfo; Jazzy (7.x) has none
    from rclpy.timer import TimerInfo
except ImportError:  # pragma: no cover - depends on the distro
    TimerInfo = None

try:  # the QoS event handlers (polled, see the module docstring); absent: waited on as others
    from rclpy.event_handler import EventHandler as _EventHandler
except ImportError:  # pragma: no cover - older rclpy (rclpy.qos_event): no event is polled
    _EventHandler = ()

__all__ = ['DirectExecutor', 'DirectExecutorUnsupported', 'missing_internals']

_WITH_INFO = Subscription.CallbackType.WithMessageInfo

#: rclpy internals DirectExecutor builds on, checked by name (feature detection, not versions):
#: on the class, on an executor instance, and on the native wait set.
_CLASS_INTERNALS = ('_spin_once_impl', 'can_execute', 'get_nodes')
_INSTANCE_INTERNALS = ('_tasks', '_tasks_lock', '_cb_iter', '_guard', '_sigint_gc',
                       '_is_shutdown', '_context')
_WAIT_SET_INTERNALS = ('clear_entities', 'add_subscription', 'add_client', 'add_service',
                       'add_timer', 'add_guard_condition', 'wait', 'get_ready_entities')

#: Longest wait [s] once a stop signal arrived, until the context is seen shut down (below).
SIGNAL_POLL_S = 0.01
#: QoS event handlers join the wait at most this often [s] (module docstring).
EVENT_POLL_S = 0.05


class DirectExecutorUnsupported(RuntimeError):
    """This rclpy lacks an internal DirectExecutor needs (``missing_internals`` names it)."""


def missing_internals(executor: SingleThreadedExecutor | None = None) -> list[str]:
    """Names of the rclpy internals DirectExecutor needs that this rclpy lacks ([] if none).

    ``executor``: an instance to check the per-instance attributes on (else only the class and
    the native module are checked).
    """
    missing = [f'SingleThreadedExecutor.{n}' for n in _CLASS_INTERNALS
               if not hasattr(SingleThreadedExecutor, n)]
    wait_set = getattr(_rclpy, 'WaitSet', None)
    if wait_set is None:
        missing.append('_rclpy.WaitSet')
    else:
        missing += [f'_rclpy.WaitSet.{n}' for n in _WAIT_SET_INTERNALS if not hasattr(wait_set, n)]
    if not hasattr(Subscription, 'CallbackType'):
        missing.append('Subscription.CallbackType')
    if executor is not None:
        missing += [f'Executor.{n}' for n in _INSTANCE_INTERNALS if not hasattr(executor, n)]
    return missing


def _timer_info_arg(callback: Callable[..., Any]) -> str | None:
    # The parameter annotated TimerInfo, if any (rclpy passes the TimerInfo to it by name).
    if TimerInfo is None:
        return None
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p.name for p in params if p.annotation == TimerInfo), None)


def _enter(stack: ExitStack, handle) -> bool:
    try:
        stack.enter_context(handle)
    except Exception:  # noqa: BLE001 - rclpy's InvalidHandle: destroyed meanwhile
        return False
    return True


class _Waiting:
    """The entities waited on, their entered handles and the rcl wait set (see _rebuild).

    ``sub_ptrs``, ``timer_ptrs``, ``node_guard_ptrs``: the rcl pointers of ``subs``, ``timers``,
    ``node_guards`` (constant while the handles are held), in the same order; ``events``: the
    polled QoS event handlers, ``waitables`` the other waitables.
    """

    def __init__(self, nodes: list, stack: ExitStack) -> None:
        self.nodes, self.stack = nodes, stack
        self.subs: list = []
        self.clients: list = []
        self.services: list = []
        self.timers: list = []
        self.node_guards: list = []
        self.guards: list = []
        self.waitables: list = []
        self.events: list = []
        self.sub_ptrs: list = []
        self.service_ptrs: list = []
        self.timer_ptrs: list = []
        self.node_guard_ptrs: list = []
        self.signal_ptr = None  # DirectExecutor._signal_gc's pointer, if in the wait set
        self.wait_set = None


class DirectExecutor(SingleThreadedExecutor):
    """``SingleThreadedExecutor`` with direct dispatch of messages and timers (module docstring).

    :param context: the rclpy context, or ``None`` for the default one.
    :raises DirectExecutorUnsupported: this rclpy lacks an internal it builds on (the caller
        falls back to ``SingleThreadedExecutor``; ``linearizer_node`` does and logs it).
    """

    def __init__(self, *, context=None) -> None:
        super().__init__(context=context)
        missing = missing_internals(self)
        if missing:
            super().shutdown()
            raise DirectExecutorUnsupported(
                'rclpy lacks internals the direct executor uses: ' + ', '.join(missing))
        self._timer_args: dict[int, tuple[Callable[..., Any], str | None]] = {}
        self._waiting: _Waiting | None = None
        # The handles held by the cached wait set are released by the spinning thread only
        # (never under its wait): shutdown() from elsewhere marks _closing, wake() _stale.
        self._state_lock = threading.Lock()
        self._spinning = False
        self._closing = False
        self._stale = False
        # rclpy's SIGINT / SIGTERM handler triggers the signal guard conditions and only then
        # shuts the contexts down, from a thread of its own: a wait woken by the trigger may
        # still find the context valid, and the trigger is consumed. Once one was seen, every
        # wait is bounded by SIGNAL_POLL_S until the context is found shut down (an unbounded
        # wait would otherwise go on until some other entity becomes ready: forever for an
        # idle node). A guard condition of our own, in no other wait set (rclpy's _sigint_gc
        # is also in the wait of the handed-over path, which may consume its trigger).
        self._signal_gc = SignalHandlerGuardCondition(self._context)
        self._signalled = False
        self._next_event_poll = 0.0  # time.monotonic() of the next wait with the QoS events
        self._plain: dict[int, tuple[Callable[..., Any], bool]] = {}  # id(sub): (cb, plain)

    def spin(self) -> None:
        """Execute callbacks until shutdown (of the executor or of its context)."""
        while self._context.ok() and not self._is_shutdown:
            self._guarded_once(None)

    def spin_once(self, timeout_sec: float | None = None) -> None:
        """Wait up to ``timeout_sec`` (``None``: forever) for work and run it.

        Returns once a callback ran or the time is up (a wake-up alone, e.g. an entity
        created, does not end the wait, as with rclpy). Unlike rclpy's, one call may run
        several callbacks (every entity found ready by one wait).
        """
        deadline = None if timeout_sec is None or timeout_sec < 0 else (
            time.monotonic() + timeout_sec)
        remaining = timeout_sec
        while True:
            if self._guarded_once(remaining) or self._is_shutdown:
                return
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return

    def wake(self) -> None:
        """Wake the executor: entities were created or destroyed (rclpy's ``Node`` calls it)."""
        self._stale = True
        super().wake()

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        """Stop executing callbacks (rclpy's ``Executor.shutdown``) and release the handles.

        From any thread: a spin in progress releases them itself when its wait returns.
        """
        with self._state_lock:
            self._closing = True
            if not self._spinning:
                self._release()
            gc, self._signal_gc = self._signal_gc, None
        if gc is not None:
            gc.destroy()  # (deferred by rclpy until a spin in progress releases its handle)
        return super().shutdown(timeout_sec)

    def _guarded_once(self, timeout_sec: float | None) -> bool:
        with self._state_lock:
            if self._closing:
                return False
            self._spinning = True
        try:
            return self._direct_once(timeout_sec)
        finally:
            with self._state_lock:
                self._spinning = False
                if self._closing:
                    self._release()

    # --- one wait, then dispatch -------------------------------------------------------------

    def _direct_once(self, timeout_sec: float | None) -> bool:
        if self._tasks:
            with self._tasks_lock:  # forget finished tasks (rclpy's generator does the same)
                self._tasks = [t for t in self._tasks if not (t[0].done() or t[0].cancelled())]
            if self._tasks:  # create_task() work or a coroutine callback awaiting: rclpy's path
                # with rclpy's generator kept between calls, as rclpy keeps it: it yields the
                # tasks, then waits (a fresh one each call would only ever run the tasks)
                super()._spin_once_impl(timeout_sec)
                return True
        nodes = self.get_nodes()
        w = self._waiting
        if w is None or self._stale or w.nodes != nodes:
            w = self._rebuild(nodes)
        events = False
        if w.events:  # the QoS event handlers join this wait if their poll is due
            now = time.monotonic()
            events = now >= self._next_event_poll
            if events:
                self._next_event_poll = now + EVENT_POLL_S
            elif timeout_sec is None or timeout_sec < 0 or \
                    timeout_sec > self._next_event_poll - now:
                timeout_sec = self._next_event_poll - now  # wake up for the next poll
        ws = w.wait_set
        try:
            self._fill(w, events)
        except InvalidHandle:  # destroyed without a wake(): build from the live entities
            w = self._rebuild(nodes)
            ws = w.wait_set
            self._fill(w, events)
        if self._signalled and (timeout_sec is None or not 0 <= timeout_sec <= SIGNAL_POLL_S):
            timeout_sec = SIGNAL_POLL_S  # a stop signal arrived: see __init__
        ws.wait(timeout_sec_to_nsec(timeout_sec))
        if self._is_shutdown:
            return False
        if not self._context.ok():
            raise ExternalShutdownException()
        guards_ready = ws.get_ready_entities('guard_condition')
        others = 0
        if guards_ready:
            if w.signal_ptr is not None and w.signal_ptr in guards_ready:
                self._signalled = True
            # The executor's guard only wakes this wait: what changed is known from wake()
            # (_stale, rebuilt on the next call) and the node list; the signal guards: the
            # context check above (and _signalled). A user guard condition (consumed by this
            # wait) is triggered again for rclpy's path, which runs its callback.
            for g, ptr in zip(w.node_guards, w.node_guard_ptrs, strict=True):
                if ptr in guards_ready:
                    g.trigger()
                    others += 1
        if w.clients:
            others += len(ws.get_ready_entities('client'))
        if w.services:
            services_ready = ws.get_ready_entities('service')
            if services_ready:
                for srv, ptr in zip(w.services, w.service_ptrs, strict=True):
                    if ptr in services_ready and not self._take_deferred(srv):
                        others += 1
        for e in w.waitables:
            others += bool(e.is_ready(ws))
        if events:
            for e in w.events:
                others += bool(e.is_ready(ws))
        ran = False
        if w.timers:
            timers_ready = ws.get_ready_entities('timer')
            if timers_ready:
                for tmr, ptr in zip(w.timers, w.timer_ptrs, strict=True):
                    if ptr in timers_ready:
                        ran = True
                        if not self._call_timer(tmr):
                            others += 1
        subs_ready = ws.get_ready_entities('subscription')
        if subs_ready:
            for sub, ptr in zip(w.subs, w.sub_ptrs, strict=True):
                if ptr in subs_ready:
                    ran = True
                    if not self._take_and_call(sub):
                        others += 1
        if others:
            self._hand_over(others)
        return ran or others > 0

    @staticmethod
    def _fill(w: _Waiting, events: bool) -> None:
        ws = w.wait_set
        ws.clear_entities()
        for e in w.subs:
            ws.add_subscription(e.handle)
        for e in w.clients:
            ws.add_client(e.handle)
        for e in w.services:
            ws.add_service(e.handle)
        for e in w.timers:
            ws.add_timer(e.handle)
        for e in w.guards:
            ws.add_guard_condition(e.handle)
        for e in w.waitables:
            e.add_to_wait_set(ws)
        if events:
            for e in w.events:
                e.add_to_wait_set(ws)

    def _rebuild(self, nodes: list) -> _Waiting:
        # Enter every entity's handle (rclpy defers a destroy() until they are released) and
        # hold them until the next rebuild: destroying an entity triggers the executor's guard
        # (Node._wake_executor), whose wake-up releases them.
        self._release()
        self._stale = False
        stack = ExitStack()
        w = _Waiting(nodes, stack)
        n_events = 0
        try:
            for group, entities in (('subs', 'subscriptions'), ('clients', 'clients'),
                                    ('services', 'services'), ('timers', 'timers'),
                                    ('node_guards', 'guards')):
                live = getattr(w, group)
                for n in nodes:
                    for e in getattr(n, entities):
                        if self.can_execute(e) and _enter(stack, e.handle):
                            live.append(e)
            counts = [len(w.subs), len(w.clients), len(w.services), len(w.timers)]
            for g in (self._guard, self._sigint_gc, self._signal_gc):
                if g is not None and _enter(stack, g.handle):
                    w.guards.append(g)
            if self._signal_gc is not None and self._signal_gc in w.guards:
                w.signal_ptr = self._signal_gc.handle.pointer
            w.guards.extend(w.node_guards)
            n_guards = len(w.guards)
            for n in nodes:
                for e in n.waitables:
                    if self.can_execute(e) and _enter(stack, e):
                        (w.events if isinstance(e, _EventHandler) else w.waitables).append(e)
                        ne = e.get_num_entities()
                        counts[0] += ne.num_subscriptions
                        counts[1] += ne.num_clients
                        counts[2] += ne.num_services
                        counts[3] += ne.num_timers
                        n_guards += ne.num_guard_conditions
                        n_events += ne.num_events
            w.sub_ptrs = [e.handle.pointer for e in w.subs]
            w.service_ptrs = [e.handle.pointer for e in w.services]
            w.timer_ptrs = [e.handle.pointer for e in w.timers]
            w.node_guard_ptrs = [e.handle.pointer for e in w.node_guards]
            stack.enter_context(self._context.handle)
            w.wait_set = _rclpy.WaitSet(counts[0], n_guards, counts[3], counts[1], counts[2],
                                        n_events, self._context.handle)
        except BaseException:
            stack.close()
            raise
        self._waiting = w
        self._next_event_poll = 0.0  # new entities: their events join the next wait
        live = {id(t) for t in w.timers}
        self._timer_args = {k: v for k, v in self._timer_args.items() if k in live}
        live = {id(e) for e in w.subs}
        self._plain = {k: v for k, v in self._plain.items() if k in live}
        return w

    def _release(self) -> None:
        w, self._waiting = self._waiting, None
        if w is not None:
            w.wait_set = None
            w.stack.close()

    # --- failed takes: counted, logged (throttled), readable by the nodes' diagnostics -------

    #: Failed takes of every subscription: ``take_message`` raised (not ``InvalidHandle``).
    take_errors = 0
    _take_failures: Any = None  # weakref.WeakKeyDictionary: sub -> [count, reason, order]
    _take_failure_log: LogThrottle | None = None  # their log lines, at most one per second

    def take_failures(self, subscriptions=None) -> tuple[int, str]:
        """Return ``(count, newest reason)`` of the failed takes of ``subscriptions``.

        ``subscriptions``: an iterable of subscriptions (e.g. a node's ``subscriptions``), or
        None for every subscription still alive. A take fails when ``take_message`` raises
        anything but ``InvalidHandle`` (an rmw error, a message rclpy cannot convert): that
        message is lost and its callback not called, and spinning goes on; each failure is
        counted here and logged (throttled to 1/s) through the logger of the subscription's
        node. The reason names the topic and the exception. (rclpy's executor raises such an
        error out of ``spin``; an entity destroyed meanwhile, ``InvalidHandle``, is skipped
        silently by both.)
        """
        fails = self._take_failures
        if not fails:
            return 0, ''
        subs = list(fails.keys()) if subscriptions is None else subscriptions
        records = [r for r in (fails.get(s) for s in subs) if r is not None]
        if not records:
            return 0, ''
        return sum(r[0] for r in records), max(records, key=lambda r: r[2])[1]

    def _take_failed(self, sub, error: Exception) -> None:
        # Count and log a failed take (never raises: the spin goes on). Imports here: rare path.
        import weakref

        from rclpy import logging as rclpy_logging

        self.take_errors += 1
        if self._take_failures is None:
            self._take_failures = weakref.WeakKeyDictionary()
            self._take_failure_log = LogThrottle(1.0)
        reason = (f'take failed on {getattr(sub, "topic_name", "?")} ({type(error).__name__}: '
                  f'{error}): message not delivered')
        record = self._take_failures.setdefault(sub, [0, '', 0])
        record[0] += 1
        record[1], record[2] = reason, self.take_errors
        owner = next((n for n in self.get_nodes() if sub in n.subscriptions), None)
        logger = owner.get_logger() if owner is not None else rclpy_logging.get_logger(
            'direct_executor')
        if self._take_failure_log.due():
            logger.warning(f'{reason} ({record[0]} on this subscription)')

    def _take_and_call(self, sub) -> bool:
        """Take one message of ``sub`` and run its callback; False: not a plain callback.

        A take that raises is counted and logged (``take_failures``), except ``InvalidHandle``
        (destroyed by an earlier callback) and errors once the context is shut down.
        """
        callback = sub.callback
        known = self._plain.get(id(sub))
        if known is None or known[0] is not callback:  # (inspect costs ~1 µs: once per callback)
            known = (callback, not inspect.iscoroutinefunction(callback))
            self._plain[id(sub)] = known
        if not known[1]:
            return False
        try:
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
        except InvalidHandle:  # destroyed by an earlier callback: skipped, as rclpy does
            return True
        except Exception as e:  # noqa: BLE001 - a lost message: counted, logged, spin goes on
            if self._context.ok():
                self._take_failed(sub, e)
            return True
        if taken is None:
            return True
        if sub._callback_type is _WITH_INFO:
            callback(*taken)
        else:
            callback(taken[0])
        return True

    def _take_deferred(self, srv) -> bool:
        """Take one request of ``srv`` for its deferred callback; False: it has none.

        The deferred callback (``callback.deferred(request, header, service)``) answers later
        with ``service.send_response(response, header)``; an error taking the request is left
        to rclpy's path (False) unless the service was destroyed meanwhile.
        """
        deferred = getattr(srv.callback, 'deferred', None)
        if deferred is None:
            return False
        try:
            with srv.handle:
                request, header = srv.handle.service_take_request(srv.srv_type.Request)
        except InvalidHandle:  # destroyed by an earlier callback: skipped, as rclpy does
            return True
        if header is None:
            return True
        deferred(request, header, srv)
        return True

    def _call_timer(self, tmr) -> bool:
        """Call ``tmr`` (rcl: next call time) and its callback; False: not a plain callback."""
        callback = tmr.callback
        if callback is None or inspect.iscoroutinefunction(callback):
            return False
        cached = self._timer_args.get(id(tmr))
        if cached is None or cached[0] is not callback:
            cached = (callback, _timer_info_arg(callback))
            self._timer_args[id(tmr)] = cached
        try:
            with tmr.handle:
                if not tmr.handle.is_timer_ready():  # cancelled since the wait
                    return True
                arg = cached[1]
                if arg is None:  # (Jazzy's rclpy has no TimerInfo: always this branch)
                    tmr.handle.call_timer()
                else:
                    info = tmr.handle.call_timer_with_info()
        except Exception:  # noqa: BLE001 - InvalidHandle (destroyed), TimerCancelledError
            return True
        if arg is None:
            callback()
        else:
            callback(**{arg: TimerInfo(expected_call_time=info['expected_call_time'],
                                       actual_call_time=info['actual_call_time'],
                                       clock_type=tmr.clock.clock_type)})
        return True

    def _hand_over(self, n: int) -> None:
        # rclpy's own path, without waiting, once per entity it has to serve; a fresh generator
        # each time, so that none resumes on a stale wait set. (Its wait consumes the
        # executor's guard condition, but an entity created or destroyed in these callbacks
        # went through wake(): _stale says so.)
        for _ in range(n):
            self._cb_iter = None
            super()._spin_once_impl(0)
        self._cb_iter = None
