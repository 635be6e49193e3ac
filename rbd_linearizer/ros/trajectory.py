"""The node's trajectory interfaces: ``~/linearize_trajectory`` and the ``~/trajectory`` topic.

``TrajectoryServer``, an object the linearizer node holds (``ros/node.py``; docs/node.md,
"Trajectories"), with its own state (the mailbox, the publisher, its encoder) and an explicit
interface to the node: what it reads (``current()``: the served model, the parameters, whether
the node is active), where it counts (the node's ``Stats``), how it refuses (``reject``) and the
node's request queue. Nothing of the node's private state is shared.

* service ``~/linearize_trajectory`` (``srv/LinearizeTrajectory``): the request's trajectory is
  checked (``online.trajectory.check_trajectory``: errors name the offending point) and
  linearized at every point in one ``linearize_batch`` call (``Served.linearize_trajectory``),
  **in the node's request worker** (``online.requests.RequestQueue``, with
  ``Served.request_data``), never in the executor thread: the tick keeps its rate while a
  long request is computed. Requests are answered in the order they came; a request that finds
  the queue full is refused at once with the reason (``refused_requests``);
* topic mode for real-time-iteration loops: ``~/trajectory`` (``msg/Trajectory``, subscribed
  raw) goes into a one-slot mailbox (``online.trajectory.NewestOnly``): the newest trajectory
  replaces one not yet started (counted, ``superseded_trajectories``), never a queue; one
  worker thread reads it from the bytes (``cdr.trajectory_fields``), checks and linearizes it
  with a workspace of its own (``Served.trajectory_data``) and publishes
  ``~/trajectory_linearization`` serialized (``cdr.TrajectoryLinearizationEncoder``),
  stamped with the trajectory's stamp; with a contact catalogue,
  ``~/trajectory_contact_forces`` (lambda_k and its Jacobians at every point,
  ``msg/TrajectoryContactForces``) with the same stamp, just before it.

A trajectory's contact schedule (``Trajectory.contact_frames`` / ``contact_schedule``, over the
node's catalogue; docs/contacts.md §5) is checked with the rest (``check_schedule``).

Nothing non-finite is published or answered (``online.finite.non_finite_fields``, the point
named); a rejected trajectory is counted (``rejected_trajectory``) and logged.
"""

from __future__ import annotations

from collections.abc import Callable
import time
from typing import Any

import numpy as np

from rbd_linearizer.errors import ConfigError, RbdError, StateError
from rbd_linearizer.msg import Trajectory as TrajectoryMsg
from rbd_linearizer.msg import TrajectoryContactForces as TrajectoryContactForcesMsg
from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg
from rbd_linearizer.online import implied
from rbd_linearizer.online.finite import non_finite_fields
from rbd_linearizer.online.requests import RequestQueue
from rbd_linearizer.online.trajectory import NewestOnly, TrajectoryLinearization, check_trajectory
from rbd_linearizer.ros import conversions as conv
from rbd_linearizer.ros.cdr import TrajectoryLinearizationEncoder, trajectory_fields
from rbd_linearizer.ros.entities import Handles
from rbd_linearizer.ros.log_throttle import LogThrottle
from rbd_linearizer.ros.qos import result_qos
from rbd_linearizer.ros.requests import queued_service
from rbd_linearizer.srv import LinearizeTrajectory as LinearizeTrajectorySrv

#: ~/trajectory: reliable, keep last 1 (an older trajectory waiting in the reader is replaced
#: there too; counted from the publisher's sequence numbers).
TRAJECTORY_QOS = result_qos(1)
#: ~/trajectory_linearization: reliable, keep last 10 (a slow subscriber never blocks us).
TRAJECTORY_OUTPUT_QOS = result_qos(10)


def _first_non_finite_point(res: TrajectoryLinearization) -> int:
    rows = ~(np.isfinite(res.A).all(axis=(1, 2)) & np.isfinite(res.B).all(axis=(1, 2))
             & np.isfinite(res.f).all(axis=1))
    bad = np.flatnonzero(rows)
    return int(bad[0]) if bad.size else -1


class TrajectoryServer:
    """``~/linearize_trajectory`` and ``~/trajectory`` of the linearizer node.

    ``node``: creates the entities and logs; ``stats``: the node's ``online.stats.Stats``;
    ``reject(what, reason)``: the node's refusal (logged, counted); ``current()``: ``(served,
    cfg, active)`` now; ``requests``: the node's request queue, ``group``: the callback group
    of the node's services. ``activate()`` creates the service, the subscription and the
    publisher (each activation a new mailbox and worker) and returns their handles for the
    node to destroy. ``names``: the names of the four interfaces (``NAMES``' keys) when they
    are not ``node``'s own (the trajectory process serves the linearizer node's names,
    ``ros/trajectory_process.py``).
    """

    #: The interfaces, by their names relative to the linearizer node.
    NAMES = ('~/linearize_trajectory', '~/trajectory', '~/trajectory_linearization',
             '~/trajectory_contact_forces')

    def __init__(self, node, stats, reject: Callable[[str, str], None],
                 current: Callable[[], tuple[Any, dict, bool]], requests: RequestQueue,
                 group=None, names: dict[str, str] | None = None):
        """Remember the node's interface; nothing is created before ``activate``."""
        self._node, self._stats, self._reject, self._current = node, stats, reject, current
        self._requests, self._group = requests, group
        self._names = {n: n for n in self.NAMES} if names is None else dict(names)
        self._pub = None
        self._forces_pub = None
        self._mailbox: NewestOnly | None = None
        self._refusal_log = LogThrottle(1.0)

    @property
    def names(self) -> dict[str, str]:
        """The names the interfaces are created with (``NAMES`` -> the name given)."""
        return dict(self._names)

    def activate(self, outputs_created: Callable[[list], None] | None = None) -> Handles:
        """Create the publishers, then the ``~/trajectory`` subscription and the service.

        ``outputs_created(publishers)``, if given, runs between the two (the trajectory
        process waits there until its publishers reach the subscribers already listening).
        """
        node = self._node
        encoder = TrajectoryLinearizationEncoder()  # this activation's worker's only
        self._mailbox = NewestOnly(lambda raw: self._work(raw, encoder), 'trajectory')
        name = self._names
        self._pub = node.create_publisher(TrajectoryLinearizationMsg,
                                          name['~/trajectory_linearization'],
                                          TRAJECTORY_OUTPUT_QOS)
        self._forces_pub = node.create_publisher(TrajectoryContactForcesMsg,
                                                 name['~/trajectory_contact_forces'],
                                                 TRAJECTORY_OUTPUT_QOS)
        if outputs_created is not None:
            outputs_created([self._pub, self._forces_pub])
        sub = node.create_subscription(TrajectoryMsg, name['~/trajectory'],  # (info: gaps)
                                       lambda raw, info: self.on_trajectory(raw, info),
                                       TRAJECTORY_QOS, raw=True)
        srv = node.create_service(LinearizeTrajectorySrv, name['~/linearize_trajectory'],
                                  queued_service(node, self._requests, self.answer,
                                                 self._refused), callback_group=self._group)
        return [('pub', self._pub), ('pub', self._forces_pub), ('sub', sub), ('srv', srv)]

    def result(self, served, cfg, fields: dict, data=None) -> TrajectoryLinearization:
        """Check ``fields`` (errors name the point), linearize every point, guard the output."""
        points = check_trajectory(served, cfg, **fields)
        res = served.linearize_trajectory(points, cfg, data)
        bad = non_finite_fields(res)
        if bad:  # e.g. overflow at absurd velocities: never publish or answer NaN or inf
            raise StateError(f'point {_first_non_finite_point(res)}: non-finite '
                             f'{", ".join(bad)} (overflow)')
        self._stats.trajectory_ms.append(res.compute_time * 1e3)
        return res

    # --- topic mode -------------------------------------------------------------------------

    def on_trajectory(self, raw: bytes, info=None) -> None:
        """Executor thread: count, put the bytes in the one-slot mailbox, return at once."""
        st = self._stats
        st.gaps['trajectory'].update(info)
        st.trajectories_received += 1
        box = self._mailbox
        before = box.superseded
        box.submit(raw)  # (only this thread submits)
        st.trajectories_superseded += box.superseded - before

    def _work(self, raw: bytes, encoder: TrajectoryLinearizationEncoder) -> None:
        # Worker thread (one at a time): the newest trajectory; the tick keeps running.
        served, cfg, active = self._current()
        if served is None or not active:
            return
        start = time.perf_counter()
        try:
            # read from the bytes (ros/cdr.py): no Python object per pose, twist or number
            res = self.result(served, cfg, trajectory_fields(raw), served.trajectory_data)
            out = encoder.encode(res, cfg['world_frame'], implied.configured(res.time_model, cfg))
            forces = (conv.trajectory_contact_forces_to_msg(res, cfg['world_frame'])
                      if res.contact_forces is not None else None)
        except Exception as e:  # noqa: BLE001 - a bad trajectory is refused, never the node
            reason = str(e) if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
            self._reject('trajectory', reason)
            return
        pub = self._pub
        if pub is None or not self._current()[2]:
            return
        try:
            if forces is not None:  # first: a consumer pairing by stamp has both on arrival
                self._forces_pub.publish(forces)
            pub.publish(out)
        except Exception as e:  # noqa: BLE001 - deactivated meanwhile (publisher destroyed)
            self._node.get_logger().warning(f'~/trajectory_linearization not published: {e}')
            return
        self._stats.trajectories_published += 1
        if self._stats.trajectories_published == 1:
            self._node.get_logger().info(
                f'first trajectory linearization published ({res.n_points} points, '
                f'{(time.perf_counter() - start) * 1e3:.1f} ms): {pub.topic_name}')

    # --- service ----------------------------------------------------------------------------

    def answer(self, request, response):
        """Fill ``response`` to a ``~/linearize_trajectory`` request (success or refusal).

        Runs in the node's request worker (``activate``); callable from any thread with the
        served model's ``request_data``, never the tick's workspace.
        """
        served, cfg, _ = self._current()
        try:
            if served is None:
                raise ConfigError('no robot model loaded yet')
            res = self.result(served, cfg, conv.trajectory_fields(request.trajectory),
                              served.request_data)
            response.linearization = conv.trajectory_linearization_to_msg(
                res, cfg['world_frame'], implied.configured(res.time_model, cfg))
            response.contact_forces = conv.trajectory_contact_forces_to_msg(res,
                                                                            cfg['world_frame'])
            response.success, response.message = True, ''
            bad = non_finite_fields(response)  # every number sent, whatever its origin
            if bad:
                raise StateError(f'non-finite {", ".join(bad)} in the response')
            self._stats.trajectory_requests += 1
        except Exception as e:  # noqa: BLE001 - any bad request gets success=false
            reason = str(e) if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
            return self._refused(response, reason)
        return response

    def _refused(self, response, reason: str):
        response.success, response.message = False, reason
        response.linearization = TrajectoryLinearizationMsg()  # nothing of a refusal
        response.contact_forces = TrajectoryContactForcesMsg()
        self._stats.rejected['trajectory'] += 1
        if self._refusal_log.due():
            self._node.get_logger().warning(f'~/linearize_trajectory request rejected: {reason}')
        return response
