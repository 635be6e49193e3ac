"""DirectExecutor (rbd_linearizer/ros/executor.py) against rclpy's SingleThreadedExecutor.

Most tests are parametrized over both executors, so that the same concrete assertions hold for
the stock executor (the reference semantics) and for DirectExecutor: subscriptions (plain,
with MessageInfo, raw), timers (period, TimerInfo, cancel, created or destroyed while spinning),
services and clients, coroutine callbacks and tasks, user guard conditions, exceptions out of
spin_once, entities and nodes removed while spinning, executor and context shutdown, parameter
services and lifecycle transitions.

Every test has its own rclpy Context; the run has its own ROS_DOMAIN_ID and localhost-only
discovery (test/conftest.py, set before the first rclpy init). All waits are bounded, and the
bounds only guard against a hang: no assertion counts callbacks in a wall-clock window. "Keeps
firing" waits for a number of calls; "never more often than its period" compares the calls
with the periods the node's clock reports; "does not happen" is checked over a window counted
in the calls of a witness timer (``Witness``) or in the messages a control subscription got.
Scenarios that can crash the interpreter run in a subprocess.
"""

import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from lifecycle_msgs.msg import State, Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue, SetParametersResult  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor  # noqa: E402
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from rclpy.task import Future  # noqa: E402
from std_msgs.msg import Int32  # noqa: E402

from rbd_linearizer.ros import executor as executor_module  # noqa: E402
from rbd_linearizer.ros.executor import (  # noqa: E402
    DirectExecutor,
    DirectExecutorUnsupported,
    TimerInfo,
)

#: rclpy >= 8 (Kilted) passes a TimerInfo to a callback that asks for one; Jazzy's has none.
needs_timer_info = pytest.mark.skipif(
    TimerInfo is None, reason='this rclpy (< 8, Jazzy) has no rclpy.timer.TimerInfo')

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXECUTORS = {'direct': DirectExecutor, 'rclpy': SingleThreadedExecutor}
KINDS = sorted(EXECUTORS)
MATCH_TIMEOUT = 10.0
RECEIVE_TIMEOUT = 10.0
QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


# --- fixtures and helpers -------------------------------------------------------------------

@pytest.fixture
def context():
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        yield ctx
    finally:
        ctx.try_shutdown()


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def executor(kind, context):
    ex = EXECUTORS[kind](context=context)
    try:
        yield ex
    finally:
        ex.shutdown(timeout_sec=5.0)


@pytest.fixture
def make_node(context):
    """Nodes in the test's context, destroyed at teardown (before the executor's shutdown)."""
    nodes = []

    def make(name=None, cls=None, **kwargs):
        name = name or _unique('exec_test')
        node = (cls or rclpy.node.Node)(name, context=context, **kwargs)
        nodes.append(node)
        return node

    try:
        yield make
    finally:
        for node in reversed(nodes):
            try:
                node.destroy_node()
            except Exception:  # noqa: BLE001 - already destroyed by a context shutdown
                pass


@pytest.fixture
def node(make_node, executor):
    n = make_node()
    executor.add_node(n)
    return n


def _unique(prefix):
    return f'{prefix}_{uuid.uuid4().hex[:10]}'


def stop_from_spinning_thread(executor):
    """Have the spinning thread itself run executor.shutdown() (as a task).

    (From another thread works too: test_shutdown_from_another_thread_ends_spin.)
    """
    executor.create_task(lambda: executor.shutdown(timeout_sec=0))


def spin_until(executor, condition, timeout=RECEIVE_TIMEOUT, step=0.05):
    """spin_once until ``condition()`` or the deadline; the condition's final value."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=step)
    return condition()


def spin_for(executor, seconds, step=0.02):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=min(step, max(0.0, deadline - time.monotonic())))


class Witness:
    """A timer counting its calls: a window measured in served periods, not in seconds.

    Create it before the action under test (so that the executor already serves it: no wait
    set is rebuilt for it afterwards); ``spin(executor, n)`` then spins until it has fired ``n``
    more times, so whatever must not happen had ``n`` periods of a working executor to happen,
    however slow the machine. RECEIVE_TIMEOUT only guards against a hang.
    """

    def __init__(self, node, period=0.01):
        self.calls = []
        self.timer = node.create_timer(period, lambda: self.calls.append(1))

    def spin(self, executor, n=10):
        target = len(self.calls) + n
        assert spin_until(executor, lambda: len(self.calls) >= target), \
            f'the witness timer fired {len(self.calls)} of {target} times'


def matched_publisher(executor, node, topic, n_subs=1):
    pub = node.create_publisher(Int32, topic, QOS)
    assert spin_until(executor, lambda: pub.get_subscription_count() >= n_subs, MATCH_TIMEOUT), \
        f'no subscription matched {topic} within {MATCH_TIMEOUT} s'
    return pub


class SpinThread:
    """``executor.spin()`` in a daemon thread, recording how it ended."""

    def __init__(self, executor):
        self.executor = executor
        self.outcome = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.executor.spin()
        except ExternalShutdownException:
            self.outcome = 'ExternalShutdownException'
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.outcome = f'raised {exc!r}'
        else:
            self.outcome = 'returned'

    def join(self, timeout=RECEIVE_TIMEOUT):
        self.thread.join(timeout)
        return not self.thread.is_alive()


# --- 1. subscriptions -----------------------------------------------------------------------

def test_subscription_gets_every_message_in_order(executor, node):
    topic = _unique('seq')
    got = []
    node.create_subscription(Int32, topic, lambda msg: got.append(msg.data), QOS)
    pub = matched_publisher(executor, node, topic)
    n = 60
    for i in range(n):
        pub.publish(Int32(data=i))
    assert spin_until(executor, lambda: len(got) >= n)
    spin_for(executor, 0.1)
    assert got == list(range(n))


def test_subscription_with_message_info_gets_the_info(executor, node):
    topic = _unique('info')
    got = []

    def callback(msg, info):
        got.append((msg, info))

    sub = node.create_subscription(Int32, topic, callback, QOS)
    assert sub._callback_type is rclpy.subscription.Subscription.CallbackType.WithMessageInfo
    pub = matched_publisher(executor, node, topic)
    pub.publish(Int32(data=7))
    pub.publish(Int32(data=8))
    assert spin_until(executor, lambda: len(got) >= 2)
    assert [m.data for m, _ in got] == [7, 8]
    for msg, info in got:
        assert isinstance(msg, Int32)
        assert isinstance(info, dict)
        assert isinstance(info['source_timestamp'], int) and info['source_timestamp'] > 0
        assert isinstance(info['received_timestamp'], int) and info['received_timestamp'] > 0
        assert info['received_timestamp'] >= info['source_timestamp']


def test_raw_subscription_gets_bytes(executor, node):
    topic = _unique('raw')
    got = []
    node.create_subscription(Int32, topic, got.append, QOS, raw=True)
    pub = matched_publisher(executor, node, topic)
    for i in (3, -5, 2**31 - 1):
        pub.publish(Int32(data=i))
    assert spin_until(executor, lambda: len(got) >= 3)
    assert all(type(raw) is bytes for raw in got)
    assert [deserialize_message(raw, Int32).data for raw in got] == [3, -5, 2**31 - 1]


def test_several_subscriptions_ready_at_once_all_run(executor, node):
    topics = [_unique(f'multi{i}') for i in range(3)]
    got = {t: [] for t in topics}
    for t in topics:
        node.create_subscription(Int32, t, lambda msg, t=t: got[t].append(msg.data), QOS)
    pubs = [matched_publisher(executor, node, t) for t in topics]
    for round_ in range(5):
        for k, pub in enumerate(pubs):
            pub.publish(Int32(data=10 * round_ + k))
    assert spin_until(executor, lambda: all(len(v) >= 5 for v in got.values()))
    for k, t in enumerate(topics):
        assert got[t] == [10 * r + k for r in range(5)]


# --- 2. timers ------------------------------------------------------------------------------

def test_timer_fires_periodically_never_before_its_period(executor, node):
    clock = node.get_clock()  # the timer's own clock
    period_ns = 20_000_000
    start = clock.now().nanoseconds
    calls = []
    node.create_timer(period_ns * 1e-9, lambda: calls.append(clock.now().nanoseconds))
    assert spin_until(executor, lambda: len(calls) >= 10), calls  # periodic, not stuck
    # rcl calls a timer once its clock has reached the next due time (creation + k periods;
    # missed periods are skipped, never caught up in a burst): the k-th call (from 1) comes
    # at least k periods after the start, however late the machine made it
    early = [(k, t - start) for k, t in enumerate(calls, start=1) if t - start < k * period_ns]
    assert not early, f'calls before their period (k, ns after start): {early}'


@needs_timer_info
def test_timer_callback_annotated_timer_info_gets_timer_info(executor, node):
    infos = []

    def callback(info: TimerInfo):
        infos.append(info)

    timer = node.create_timer(0.01, callback)
    assert spin_until(executor, lambda: len(infos) >= 3)
    for info in infos:
        assert isinstance(info, TimerInfo)
        assert info.expected_call_time.clock_type == timer.clock.clock_type
        assert info.actual_call_time.clock_type == timer.clock.clock_type
        assert info.expected_call_time.nanoseconds > 0
        assert info.actual_call_time.nanoseconds >= info.expected_call_time.nanoseconds
    expected = [i.expected_call_time.nanoseconds for i in infos]
    assert expected == sorted(expected) and len(set(expected)) == len(expected)


@needs_timer_info
def test_timer_info_is_passed_by_parameter_name(executor, node):
    got = []

    def callback(first=None, *, when: TimerInfo = None):
        got.append((first, when))

    node.create_timer(0.01, callback)
    assert spin_until(executor, lambda: len(got) >= 2)
    assert all(first is None and isinstance(when, TimerInfo) for first, when in got)


def test_cancelled_timer_does_not_fire(executor, node):
    fired = []
    witness = Witness(node)
    timer = node.create_timer(0.01, lambda: fired.append(1))
    timer.cancel()
    assert timer.is_canceled()
    witness.spin(executor, 20)  # 20 of its periods served
    assert fired == []


def test_timer_cancelled_in_its_callback_stops_and_reset_restarts(executor, node):
    fired = []
    witness = Witness(node)

    def callback():
        fired.append(1)
        if len(fired) == 3:
            timer.cancel()

    timer = node.create_timer(0.01, callback)
    assert spin_until(executor, lambda: len(fired) >= 3)
    witness.spin(executor, 20)
    assert len(fired) == 3
    timer.reset()
    assert spin_until(executor, lambda: len(fired) >= 4)


def test_timer_created_inside_subscription_callback_fires(executor, node):
    topic = _unique('mk_timer')
    timers, fired = [], []

    def on_msg(msg):
        if not timers:
            timers.append(node.create_timer(0.01, lambda: fired.append(msg.data)))

    node.create_subscription(Int32, topic, on_msg, QOS)
    pub = matched_publisher(executor, node, topic)
    spin_for(executor, 0.1)  # the cached wait set (if any) exists before the timer does
    pub.publish(Int32(data=42))
    assert spin_until(executor, lambda: len(fired) >= 3)
    assert set(fired) == {42}


def test_subscription_created_inside_timer_callback_receives(executor, node):
    topic = _unique('mk_sub')
    subs, got = [], []

    def on_timer():
        if not subs:
            subs.append(node.create_subscription(Int32, topic, lambda m: got.append(m.data),
                                                 QOS))

    node.create_timer(0.01, on_timer)
    assert spin_until(executor, lambda: bool(subs))
    pub = matched_publisher(executor, node, topic)
    pub.publish(Int32(data=5))
    assert spin_until(executor, lambda: got == [5])


def test_timer_destroyed_inside_its_callback_stops(executor, node):
    fired = []
    witness = Witness(node)

    def callback():
        fired.append(1)
        if len(fired) == 2:
            assert node.destroy_timer(timer)

    timer = node.create_timer(0.01, callback)
    assert spin_until(executor, lambda: len(fired) >= 2)
    witness.spin(executor, 20)
    assert len(fired) == 2
    assert timer not in list(node.timers)


# --- 3. services and clients ----------------------------------------------------------------

def _upper_service(node, name, served):
    def handle(request, response):
        served.append(list(request.names))
        response.values = [ParameterValue(type=ParameterType.PARAMETER_STRING,
                                          string_value=n.upper()) for n in request.names]
        return response

    return node.create_service(GetParameters, name, handle)


def test_service_and_client_in_the_same_executor(executor, make_node):
    server, caller = make_node(), make_node()
    executor.add_node(server)
    executor.add_node(caller)
    name = '/' + _unique('upper')
    served = []
    _upper_service(server, name, served)
    client = caller.create_client(GetParameters, name)
    assert client.wait_for_service(timeout_sec=MATCH_TIMEOUT)
    for words in (['a', 'bc'], ['xyz']):
        future = client.call_async(GetParameters.Request(names=words))
        executor.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
        assert future.done()
        assert [v.string_value for v in future.result().values] == [w.upper() for w in words]
    assert served == [['a', 'bc'], ['xyz']]


def test_client_response_is_delivered_by_plain_spin_once(executor, make_node):
    server, caller = make_node(), make_node()
    executor.add_node(server)
    executor.add_node(caller)
    name = '/' + _unique('upper')
    _upper_service(server, name, [])
    client = caller.create_client(GetParameters, name)
    assert client.wait_for_service(timeout_sec=MATCH_TIMEOUT)
    done = []
    future = client.call_async(GetParameters.Request(names=['q']))
    future.add_done_callback(lambda f: done.append(f.result().values[0].string_value))
    assert spin_until(executor, lambda: done == ['Q'])


# --- 4. coroutines --------------------------------------------------------------------------

def test_async_subscription_callback_completes(executor, node):
    topic = _unique('async_sub')
    got = []

    async def callback(msg):
        got.append(msg.data)

    node.create_subscription(Int32, topic, callback, QOS)
    pub = matched_publisher(executor, node, topic)
    for i in range(5):
        pub.publish(Int32(data=i))
    assert spin_until(executor, lambda: len(got) >= 5)
    assert got == list(range(5))


def test_create_task_coroutine_completes(executor, node):
    async def work(a, b):
        return a * b

    task = executor.create_task(work, 6, 7)
    executor.spin_until_future_complete(task, timeout_sec=RECEIVE_TIMEOUT)
    assert task.done() and task.result() == 42


def test_task_awaiting_a_future_set_by_a_timer_completes(executor, node):
    future = Future(executor=executor)  # (Executor.create_future: rclpy >= 8 only)
    ticks = []

    def on_timer():
        ticks.append(1)
        if len(ticks) == 3 and not future.done():
            future.set_result('set by timer')

    async def waiter():
        value = await future
        return f'{value}, awaited'

    node.create_timer(0.01, on_timer)
    task = executor.create_task(waiter)
    assert spin_until(executor, task.done)
    assert task.result() == 'set by timer, awaited'
    assert len(ticks) >= 3


def test_async_service_callback_awaiting_a_client_call(executor, make_node):
    # A coroutine service callback that itself calls another service (needs the task path).
    inner_srv_node, outer_srv_node, caller = make_node(), make_node(), make_node()
    for n in (inner_srv_node, outer_srv_node, caller):
        executor.add_node(n)
    inner_name, outer_name = '/' + _unique('inner'), '/' + _unique('outer')
    _upper_service(inner_srv_node, inner_name, [])
    # Reentrant: the response must be taken while the outer callback (a task) is pending,
    # which a mutually exclusive group shared with the service forbids (rclpy deadlocks).
    inner_client = outer_srv_node.create_client(GetParameters, inner_name,
                                                callback_group=ReentrantCallbackGroup())

    async def outer(request, response):
        inner = await inner_client.call_async(GetParameters.Request(names=list(request.names)))
        response.values = list(reversed(inner.values))
        return response

    outer_srv_node.create_service(GetParameters, outer_name, outer)
    client = caller.create_client(GetParameters, outer_name)
    assert client.wait_for_service(timeout_sec=MATCH_TIMEOUT)
    assert inner_client.wait_for_service(timeout_sec=MATCH_TIMEOUT)
    future = client.call_async(GetParameters.Request(names=['one', 'two']))
    executor.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
    assert future.done()
    assert [v.string_value for v in future.result().values] == ['TWO', 'ONE']


# --- 5. guard conditions --------------------------------------------------------------------

def test_user_guard_condition_runs_its_callback(executor, node):
    calls = []
    witness = Witness(node)
    gc = node.create_guard_condition(lambda: calls.append(1))
    witness.spin(executor, 5)
    assert calls == []
    gc.trigger()
    assert spin_until(executor, lambda: len(calls) >= 1)
    witness.spin(executor, 10)
    assert calls == [1]  # one trigger, one call
    gc.trigger()
    assert spin_until(executor, lambda: len(calls) >= 2)
    witness.spin(executor, 10)
    assert calls == [1, 1]


def test_guard_condition_triggered_from_another_thread_wakes_spin(executor, node):
    calls = []
    gc = node.create_guard_condition(lambda: calls.append(threading.get_ident()))
    spin_for(executor, 0.05)
    threading.Timer(0.1, gc.trigger).start()
    assert spin_until(executor, lambda: bool(calls), timeout=5.0, step=1.0)
    assert calls == [threading.get_ident()]  # ran in the spinning thread


# --- 5b. QoS events (DirectExecutor polls their handlers, every EVENT_POLL_S) ----------------

def _incompatible_pair(node, topic, events):
    # A best-effort publisher and a reliable subscription: incompatible QoS on both ends.
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    reliable = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(
        Int32, topic, lambda msg: None, reliable,
        event_callbacks=SubscriptionEventCallbacks(
            incompatible_qos=lambda info: events.append(('sub', info.total_count))))
    return node.create_publisher(
        Int32, topic, QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT),
        event_callbacks=PublisherEventCallbacks(
            incompatible_qos=lambda info: events.append(('pub', info.total_count))))


def test_qos_event_callbacks_run(executor, node):
    events = []
    _incompatible_pair(node, _unique('qos_event'), events)
    # one long wait per call: DirectExecutor cuts it short at its next poll of the events
    assert spin_until(executor, lambda: {'sub', 'pub'} <= {e[0] for e in events},
                      timeout=MATCH_TIMEOUT, step=2.0), events
    assert sorted(events) == [('pub', 1), ('sub', 1)]  # each event once


def test_direct_executor_adds_event_handlers_to_the_wait_only_when_their_poll_is_due(
        context, make_node, monkeypatch):
    monkeypatch.setattr(executor_module, 'EVENT_POLL_S', 3600.0)
    ex = DirectExecutor(context=context)
    try:
        node = make_node()
        ex.add_node(node)
        topic = _unique('qos_poll')
        node.create_subscription(Int32, topic, lambda msg: None, QOS)
        node.create_publisher(Int32, topic, QOS)  # compatible: no event fires
        handlers = [w for w in node.waitables if isinstance(w, executor_module._EventHandler)]
        assert len(handlers) >= 2  # rclpy's default handlers of the publisher, subscription
        adds = []
        for h in handlers:
            monkeypatch.setattr(h, 'add_to_wait_set',
                                lambda ws, h=h, add=h.add_to_wait_set: (adds.append(h),
                                                                         add(ws))[1])
        for _ in range(20):
            ex.spin_once(timeout_sec=0)
        assert len(adds) == len(handlers)  # the first wait only: the next poll is 1 h away
        ex._next_event_poll = 0.0  # the poll is due: the next wait has them again, once
        for _ in range(5):
            ex.spin_once(timeout_sec=0)
        assert len(adds) == 2 * len(handlers)
    finally:
        ex.shutdown(timeout_sec=5.0)


# --- 6. exceptions --------------------------------------------------------------------------

def test_exception_in_subscription_callback_propagates_from_spin_once(executor, node):
    topic = _unique('boom')
    got = []

    def callback(msg):
        if msg.data == 0:
            raise RuntimeError('boom in subscription')
        got.append(msg.data)

    node.create_subscription(Int32, topic, callback, QOS)
    pub = matched_publisher(executor, node, topic)
    pub.publish(Int32(data=0))
    with pytest.raises(RuntimeError, match='boom in subscription'):
        spin_until(executor, lambda: False, timeout=RECEIVE_TIMEOUT)
    pub.publish(Int32(data=1))  # the executor stays usable
    assert spin_until(executor, lambda: got == [1])


def test_exception_in_timer_callback_propagates_from_spin_once(executor, node):
    calls = []

    def callback():
        calls.append(1)
        if len(calls) == 1:
            raise ValueError('boom in timer')

    node.create_timer(0.01, callback)
    with pytest.raises(ValueError, match='boom in timer'):
        spin_until(executor, lambda: False, timeout=RECEIVE_TIMEOUT)
    assert spin_until(executor, lambda: len(calls) >= 3)


# --- 7. entities and nodes going away while spinning ----------------------------------------

@pytest.mark.parametrize('kind', KINDS)
def test_subscription_destroyed_from_another_callback(executor, node):
    topic_a, topic_b = _unique('killer'), _unique('victim')
    got_a, got_b, control = [], [], []
    victim = []

    def on_a(msg):
        got_a.append(msg.data)
        if victim:
            assert node.destroy_subscription(victim.pop())

    node.create_subscription(Int32, topic_a, on_a, QOS)
    victim.append(node.create_subscription(Int32, topic_b, lambda m: got_b.append(m.data),
                                           QOS))
    # a second subscription on the victim's topic, never destroyed: what it got, the victim
    # could have got (the window is counted in messages, not seconds)
    node.create_subscription(Int32, topic_b, lambda m: control.append(m.data), QOS)
    pub_a = matched_publisher(executor, node, topic_a)
    pub_b = matched_publisher(executor, node, topic_b, n_subs=2)
    pub_b.publish(Int32(data=100))
    assert spin_until(executor, lambda: got_b == [100] and control == [100])
    # Both ready in the same wait: the victim is destroyed while it has a message pending.
    pub_b.publish(Int32(data=101))
    pub_a.publish(Int32(data=1))
    time.sleep(0.1)
    assert spin_until(executor, lambda: got_a == [1] and control == [100, 101])
    assert got_b in ([100], [100, 101])
    before = list(got_b)
    for i in range(3):
        pub_b.publish(Int32(data=200 + i))
    pub_a.publish(Int32(data=2))
    assert spin_until(executor, lambda: got_a == [1, 2] and control[-3:] == [200, 201, 202])
    assert got_b == before
    assert len(list(node.subscriptions)) == 2  # the killer and the control


@pytest.mark.parametrize('kind', KINDS)
def test_subscription_destroyed_between_spin_once_calls(executor, node):
    topic = _unique('gone_between')
    got, control = [], []
    sub = node.create_subscription(Int32, topic, lambda m: got.append(m.data), QOS)
    node.create_subscription(Int32, topic, lambda m: control.append(m.data), QOS)
    witness = Witness(node)
    pub = matched_publisher(executor, node, topic, n_subs=2)
    pub.publish(Int32(data=1))
    assert spin_until(executor, lambda: got == [1] and control == [1])
    witness.spin(executor, 3)
    assert node.destroy_subscription(sub)
    pub.publish(Int32(data=2))
    # the control subscription on the same topic got 2 and the executor kept serving
    assert spin_until(executor, lambda: control == [1, 2])
    witness.spin(executor, 3)
    assert got == [1]


def test_timer_destroyed_between_spin_once_calls(executor, node):
    fired = []
    timer = node.create_timer(0.01, lambda: fired.append(1))
    witness = Witness(node)  # same period: it keeps firing, the destroyed one stops
    assert spin_until(executor, lambda: len(fired) >= 2)
    assert node.destroy_timer(timer)
    n_fired = len(fired)
    witness.spin(executor, 20)
    assert len(fired) == n_fired


def test_removed_node_callbacks_stop_and_others_continue(executor, make_node):
    gone, kept = make_node(), make_node()
    executor.add_node(gone)
    executor.add_node(kept)
    fired_gone, fired_kept = [], []
    gone.create_timer(0.01, lambda: fired_gone.append(1))
    kept.create_timer(0.01, lambda: fired_kept.append(1))
    assert spin_until(executor, lambda: len(fired_gone) >= 2 and len(fired_kept) >= 2)
    executor.remove_node(gone)
    assert gone not in executor.get_nodes()
    n_kept = len(fired_kept)
    assert spin_until(executor, lambda: len(fired_kept) >= n_kept + 2)  # (a call in flight)
    n_gone, n_kept = len(fired_gone), len(fired_kept)
    # the kept node's timer (same period) is the witness: 20 more calls, none of the other
    assert spin_until(executor, lambda: len(fired_kept) >= n_kept + 20), fired_kept
    assert len(fired_gone) == n_gone


def test_node_removed_from_inside_a_callback(executor, make_node):
    gone, kept = make_node(), make_node()
    executor.add_node(gone)
    executor.add_node(kept)
    fired_gone, fired_kept = [], []

    def on_gone():
        fired_gone.append(1)
        if len(fired_gone) == 2:
            executor.remove_node(gone)

    gone.create_timer(0.01, on_gone)
    kept.create_timer(0.01, lambda: fired_kept.append(1))
    assert spin_until(executor, lambda: len(fired_gone) >= 2)
    n_kept = len(fired_kept)
    # the kept node's timer (same period) is the witness: it keeps firing, the other stopped
    assert spin_until(executor, lambda: len(fired_kept) >= n_kept + 20), fired_kept
    assert len(fired_gone) == 2


def test_node_added_while_spinning_in_another_thread_is_served(executor, make_node):
    first = make_node()
    executor.add_node(first)
    first.create_timer(0.05, lambda: None)
    spinner = SpinThread(executor)
    try:
        time.sleep(0.1)
        late = make_node()
        fired = []
        late.create_timer(0.01, lambda: fired.append(1))
        executor.add_node(late)
        deadline = time.monotonic() + RECEIVE_TIMEOUT
        while len(fired) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(fired) >= 3
    finally:
        stop_from_spinning_thread(executor)
        assert spinner.join()
    assert spinner.outcome == 'returned'


# --- 8. shutdown ----------------------------------------------------------------------------

def test_shutdown_from_inside_a_callback_ends_spin(executor, node):
    fired = []

    def callback():
        fired.append(1)
        if len(fired) == 3:
            assert executor.shutdown(timeout_sec=0)

    node.create_timer(0.01, callback)
    spinner = SpinThread(executor)
    assert spinner.join(RECEIVE_TIMEOUT), 'spin() did not end after shutdown()'
    assert spinner.outcome == 'returned'
    assert len(fired) == 3
    assert executor.get_nodes() == []


def test_context_shutdown_ends_spin_with_external_shutdown_exception(executor, context, node):
    fired = []
    node.create_timer(0.01, lambda: fired.append(1))
    spinner = SpinThread(executor)
    deadline = time.monotonic() + RECEIVE_TIMEOUT
    while len(fired) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(fired) >= 3
    rclpy.shutdown(context=context)
    assert spinner.join(RECEIVE_TIMEOUT), 'spin() did not end after rclpy.shutdown(context)'
    assert spinner.outcome == 'ExternalShutdownException'  # what rclpy's executor does
    assert not context.ok()


_SHUTDOWN_FROM_THREAD = textwrap.dedent("""
    import os, sys, threading, time
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Int32
    from rbd_linearizer.ros.executor import DirectExecutor

    cls = {'direct': DirectExecutor, 'rclpy': SingleThreadedExecutor}[sys.argv[1]]
    rounds, destroy = int(sys.argv[2]), sys.argv[3] == 'destroy'
    prefix = f'race_{os.getpid()}'  # topics of this process's own
    errors = []
    threading.excepthook = lambda args: errors.append(repr(args.exc_value))
    ctx = Context()
    rclpy.init(context=ctx)
    for i in range(rounds):
        node = rclpy.create_node(f'shutdown_race_{i}', context=ctx)
        for k in range(3):
            node.create_subscription(Int32, f'{prefix}_{k}', lambda m: None, 10)
        node.create_timer(0.001, lambda: None)
        ex = cls(context=ctx)
        ex.add_node(node)
        th = threading.Thread(target=ex.spin)
        th.start()
        time.sleep(0.01)
        if not ex.shutdown(timeout_sec=5.0):
            errors.append('shutdown timed out')
        if destroy:
            node.destroy_node()
        th.join(10.0)
        if th.is_alive():
            errors.append(f'round {i}: spin() did not end')
            break
        if not destroy:
            node.destroy_node()
    rclpy.shutdown(context=ctx)
    print('ERRORS', errors)
    print('ROUNDS_OK' if not errors else 'FAILED')
""")

@pytest.mark.parametrize('then', ['join', 'destroy'])
@pytest.mark.parametrize('which', [
    'direct', 'rclpy',
])
def test_shutdown_from_another_thread_ends_spin(which, then):
    """executor.shutdown() in the main thread while spin() runs in another.

    Then join the spinning thread, or destroy the node at once. In a subprocess: the failure
    mode is a crash of the interpreter.
    """
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(p for p in (REPO, env.get('PYTHONPATH')) if p)
    proc = subprocess.run(
        [sys.executable, '-c', _SHUTDOWN_FROM_THREAD, which, '25',
         'destroy' if then == 'destroy' else 'join'],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and 'ROUNDS_OK' in proc.stdout, (
        f'exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}')


# --- spin_once semantics --------------------------------------------------------------------

@pytest.mark.parametrize('which', KINDS)
def test_spin_once_after_a_wake_still_waits_for_work(which, context, make_node):
    ex = EXECUTORS[which](context=context)
    try:
        n = make_node()
        ex.add_node(n)
        topic = _unique('wake')
        got = []
        n.create_subscription(Int32, topic, lambda m: got.append(m.data), QOS)
        pub = matched_publisher(ex, n, topic)
        spin_for(ex, 0.05)
        ex.wake()  # what create_*(), destroy_*(), add_node() and remove_node() do
        timer = threading.Timer(0.3, lambda: pub.publish(Int32(data=1)))
        timer.start()
        ex.spin_once(timeout_sec=5.0)
        timer.join()
        assert got == [1]
    finally:
        ex.shutdown(timeout_sec=5.0)


def test_spin_once_timeout_without_work_returns(executor, node):
    node.create_timer(10.0, lambda: None)
    spin_for(executor, 0.05)
    t0 = time.monotonic()
    executor.spin_once(timeout_sec=0.2)
    assert time.monotonic() - t0 < 5.0  # bounded, returns after its timeout (no speed check)


# --- 9. parameter services ------------------------------------------------------------------

def test_parameters_set_remotely_while_spinning_in_a_thread(kind, context, make_node):
    server = make_node(_unique('param_server'))
    server.declare_parameter('gain', 1.0)
    server.declare_parameter('label', 'start')
    seen = []

    def on_set(params):
        seen.extend((p.name, p.value) for p in params)
        return SetParametersResult(successful=True)

    server.add_on_set_parameters_callback(on_set)
    server_ex = EXECUTORS[kind](context=context)
    server_ex.add_node(server)
    client_node = make_node()
    client_ex = SingleThreadedExecutor(context=context)
    client_ex.add_node(client_node)
    spinner = SpinThread(server_ex)
    try:
        client = AsyncParameterClient(client_node, server.get_fully_qualified_name())
        assert client.wait_for_services(timeout_sec=MATCH_TIMEOUT)
        future = client.set_parameters([Parameter('gain', value=2.5),
                                        Parameter('label', value='changed')])
        client_ex.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
        assert future.done()
        assert [r.successful for r in future.result().results] == [True, True]
        assert server.get_parameter('gain').value == 2.5
        assert server.get_parameter('label').value == 'changed'
        assert ('gain', 2.5) in seen and ('label', 'changed') in seen
        future = client.get_parameters(['gain', 'label'])
        client_ex.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
        values = future.result().values
        assert (values[0].double_value, values[1].string_value) == (2.5, 'changed')
        future = client.list_parameters()
        client_ex.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
        assert {'gain', 'label'} <= set(future.result().result.names)
    finally:
        stop_from_spinning_thread(server_ex)
        assert spinner.join(RECEIVE_TIMEOUT)
        assert spinner.outcome == 'returned'
        client_ex.shutdown(timeout_sec=5.0)


# --- 10. lifecycle --------------------------------------------------------------------------

class _Managed(LifecycleNode):
    def __init__(self, name, **kwargs):
        self.transitions = []
        super().__init__(name, **kwargs)

    def on_configure(self, state):
        self.transitions.append(('configure', state.label))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self.transitions.append(('activate', state.label))
        return super().on_activate(state)


def test_lifecycle_node_configure_and_activate_through_its_services(kind, context, make_node):
    managed = make_node(_unique('managed'), cls=_Managed)
    ex = EXECUTORS[kind](context=context)
    ex.add_node(managed)
    client_node = make_node()
    client_ex = SingleThreadedExecutor(context=context)
    client_ex.add_node(client_node)
    base = managed.get_fully_qualified_name()
    change = client_node.create_client(ChangeState, f'{base}/change_state')
    get = client_node.create_client(GetState, f'{base}/get_state')
    spinner = SpinThread(ex)
    try:
        assert change.wait_for_service(timeout_sec=MATCH_TIMEOUT)
        assert get.wait_for_service(timeout_sec=MATCH_TIMEOUT)

        def state_id():
            future = get.call_async(GetState.Request())
            client_ex.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
            assert future.done()
            return future.result().current_state.id

        assert state_id() == State.PRIMARY_STATE_UNCONFIGURED
        for transition, expected in ((Transition.TRANSITION_CONFIGURE,
                                      State.PRIMARY_STATE_INACTIVE),
                                     (Transition.TRANSITION_ACTIVATE,
                                      State.PRIMARY_STATE_ACTIVE)):
            future = change.call_async(ChangeState.Request(
                transition=Transition(id=transition)))
            client_ex.spin_until_future_complete(future, timeout_sec=RECEIVE_TIMEOUT)
            assert future.done() and future.result().success
            assert state_id() == expected
        assert managed.transitions == [('configure', 'unconfigured'), ('activate', 'inactive')]
    finally:
        stop_from_spinning_thread(ex)
        assert spinner.join(RECEIVE_TIMEOUT)
        assert spinner.outcome == 'returned'
        client_ex.shutdown(timeout_sec=5.0)


# --- feature detection: the fall-back where an rclpy internal is missing --------------------

def test_this_rclpy_has_every_internal_direct_executor_uses(context):
    ex = SingleThreadedExecutor(context=context)
    try:
        assert executor_module.missing_internals(ex) == []
    finally:
        ex.shutdown(timeout_sec=5.0)


def test_missing_internal_raises_unsupported_and_node_falls_back(context, monkeypatch):
    monkeypatch.setattr(executor_module, '_INSTANCE_INTERNALS',
                        (*executor_module._INSTANCE_INTERNALS, '_no_such_internal'))
    with pytest.raises(DirectExecutorUnsupported, match='_no_such_internal'):
        DirectExecutor(context=context)
    from rbd_linearizer.ros.spin import _executor

    messages = []
    monkeypatch.setattr(rclpy.logging, 'get_logger', lambda name: type(
        'L', (), {'warning': lambda self, m: messages.append((name, m))})())
    chosen = _executor('direct', context)
    try:
        assert type(chosen) is SingleThreadedExecutor
        assert len(messages) == 1 and '_no_such_internal' in messages[0][1]
        assert 'falling back' in messages[0][1]
    finally:
        chosen.shutdown(timeout_sec=5.0)
