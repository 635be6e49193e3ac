"""The ROS side of the parameter table: descriptors, declaration and reading of the rows.

The table itself (names, types, defaults, ranges, checks) is ``rbd_linearizer.online.params``,
shared with the command-line tools (import it from there: nothing is re-exported here).

``prepare_before_set``: the node's parameter services (``set_parameters``,
``set_parameters_atomically``, served by rclpy's ``ParameterService`` in the executor thread)
run the work a change needs first (loading kernels: 13-80 ms) in a thread of their own, then
set the parameters in the executor thread and answer (docs/node.md, "Parameters").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rbd_linearizer.online.params import PARAMETERS, Param, validate, validate_config
from rbd_linearizer.online.requests import Busy, RequestQueue


def descriptor(p: Param):
    """Return the rcl_interfaces ``ParameterDescriptor`` of a row (description, range, type)."""
    from rcl_interfaces.msg import (
        FloatingPointRange,
        IntegerRange,
        ParameterDescriptor,
        ParameterType,
    )

    d = ParameterDescriptor(description=p.description, read_only=p.read_only)
    if isinstance(p.default, list):
        d.type = ParameterType.PARAMETER_STRING_ARRAY
    if p.choices:
        d.additional_constraints = f'one of {list(p.choices)}'
    if p.low is not None:
        if isinstance(p.default, int):
            d.integer_range = [IntegerRange(from_value=int(p.low), to_value=int(p.high), step=1)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(p.low),
                                                         to_value=float(p.high), step=0.0)]
    return d


def declare(node) -> dict[str, Any]:
    """Declare every row on ``node``; return the validated configuration (ConfigError)."""
    from rclpy.exceptions import ParameterUninitializedException
    from rclpy.parameter import Parameter

    for p in PARAMETERS:
        if isinstance(p.default, list):
            # An empty list would be declared as a byte array: declare the type, then give
            # the default when no override (command line, YAML) initialized it.
            node.declare_parameter(p.name, Parameter.Type.STRING_ARRAY, descriptor(p))
            try:
                node.get_parameter(p.name)
            except ParameterUninitializedException:
                node.set_parameters([Parameter(p.name, Parameter.Type.STRING_ARRAY,
                                               list(p.default))])
        else:
            node.declare_parameter(p.name, p.default, descriptor(p))
    return validate_config({p.name: validate(p.name, _value(node, p)) for p in PARAMETERS})


def _value(node, p: Param):
    value = node.get_parameter(p.name).value
    if isinstance(p.default, list):
        return [] if value is None else list(value)
    return value


#: ``prepare_before_set``'s ``plan``: the work a request needs before it is set (None: none).
Plan = Callable[[list, bool], Callable[[], None] | None]


class _Last:
    # the completion of the last request taken (each waits for the one before: in order)
    future: Any = None


def prepare_before_set(node, plan: Plan, done: Callable[[], None], group) -> int:
    """Answer ``node``'s parameter services after the work a change needs, done off-thread.

    Wraps the callbacks of ``set_parameters`` and ``set_parameters_atomically`` of rclpy's
    ``ParameterService`` on ``node`` (``Service.callback``; found by type and name: none found,
    nothing changes) in async callbacks: each request waits for the one before it (answers in
    order), asks ``plan(parameters, atomic)`` (``parameters``: the request's
    ``rclpy.parameter.Parameter`` list; called in the executor thread) for the work the change
    needs first, runs that work in a worker thread of its own (``online.requests.
    RequestQueue``, named ``parameter-change``) while the executor goes on (the
    control tick too), then calls rclpy's callback in the executor thread (the parameters are
    checked and set as always: the node's on-set callback, events) and ``done()``, and rclpy
    answers. A ``plan`` or work that raises is logged; the parameters are set anyway (the
    node's on-set callback then does what it did before: the warm-up in place). Both
    executors: rclpy's runs the async callback, ``DirectExecutor`` hands it to rclpy's path.
    The two services move to ``group`` (a reentrant callback group): a request awaiting its
    work must not hold the node's default group, which the tick's timer and subscriptions are
    in. Returns how many services were wrapped (0 or 2).
    """
    from rcl_interfaces.srv import SetParameters, SetParametersAtomically
    from rclpy.parameter import Parameter
    from rclpy.task import Future

    from rbd_linearizer.ros.requests import _wake

    last = _Last()
    # one request's work at a time (each waits for the one before); the depth only covers
    # the moment the worker has answered one and not yet marked itself idle
    worker = RequestQueue(16, 'parameter-change')
    names = {}  # as rclpy names them (relative to the namespace), or resolved
    for base in (node.get_name(), node.get_fully_qualified_name().rstrip('/')):
        names[f'{base}/set_parameters'] = SetParameters
        names[f'{base}/set_parameters_atomically'] = SetParametersAtomically

    def wrap(original, atomic: bool):
        async def callback(request, response):
            before, mine = last.future, Future(executor=node.executor)
            mine.add_done_callback(_wake)
            last.future = mine
            try:
                if before is not None and not before.done():
                    await before
                try:
                    work = plan([Parameter.from_parameter_msg(p) for p in request.parameters],
                                atomic)
                except Exception as e:  # noqa: BLE001 - rclpy's callback decides and answers
                    node.get_logger().warning(f'parameter change: not prepared ({e})')
                    work = None
                if work is not None:
                    ready = Future(executor=node.executor)  # its result: the work's error
                    ready.add_done_callback(_wake)
                    try:
                        worker.submit(work, lambda _result, error: ready.set_result(error))
                        error = await ready
                    except Busy as e:  # (never expected: one at a time)
                        error = e
                    if error is not None:  # said; set as before
                        node.get_logger().warning(
                            f'parameter change: preparing it failed ({type(error).__name__}: '
                            f'{error}); it is applied in the executor thread')
                return original(request, response)
            finally:
                done()
                mine.set_result(None)

        return callback

    wrapped = 0
    for srv in list(node.services):
        kind = names.get(srv.srv_name)
        if kind is not None and srv.srv_type is kind:
            srv.callback = wrap(srv.callback, kind is SetParametersAtomically)
            srv.callback_group = group
            group.add_entity(srv)
            wrapped += 1
    return wrapped
