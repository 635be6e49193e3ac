"""The node's trajectory interfaces: ``~/linearize_trajectory`` and the ``~/trajectory`` topic.

A mixin of the linearizer node (``ros/node.py``; docs/node.md, "Trajectories"):

* service ``~/linearize_trajectory`` (``srv/LinearizeTrajectory``): the request's trajectory is
  checked (``online.trajectory.check_trajectory``: errors name the offending point) and
  linearized at every point in one ``linearize_batch`` call (``Served.linearize_trajectory``),
  in the executor thread, with the served model's workspace (as ``~/linearize``);
* topic mode for real-time-iteration loops: ``~/trajectory`` (``msg/Trajectory``, subscribed
  raw) goes into a one-slot mailbox (``online.trajectory.NewestOnly``): the newest trajectory
  replaces one not yet started (counted, ``superseded_trajectories``), never a queue; one
  worker thread deserializes, checks and linearizes it with a workspace of its own
  (``Served.trajectory_data``) and publishes ``~/trajectory_linearization`` serialized
  (``cdr.TrajectoryLinearizationEncoder``), stamped with the trajectory's stamp.

Nothing non-finite is published or answered (``conversions.non_finite_fields``, the point
named); a rejected trajectory is counted (``rejected_trajectory``) and logged.
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.serialization import deserialize_message

from rbd_linearizer.errors import ConfigError, RbdError, StateError
from rbd_linearizer.msg import Trajectory as TrajectoryMsg
from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg
from rbd_linearizer.online.trajectory import NewestOnly, TrajectoryLinearization, check_trajectory
from rbd_linearizer.ros import conversions as conv
from rbd_linearizer.ros.cdr import TrajectoryLinearizationEncoder
from rbd_linearizer.ros.qos import result_qos
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


class TrajectoryMixin:
    """``~/linearize_trajectory`` and ``~/trajectory`` of the linearizer node.

    Uses the node's ``_served``, ``_cfg``, ``_stats``, ``_reject``, ``_handles``, ``_active``;
    ``_activate_trajectory`` creates the service, the subscription and the publisher (each
    activation a new mailbox and worker; the counters are the node's).
    """

    _traj_pub = None
    _trajectories: NewestOnly | None = None

    def _activate_trajectory(self) -> None:
        encoder = TrajectoryLinearizationEncoder()  # this activation's worker's only
        self._trajectories = NewestOnly(lambda raw: self._trajectory_work(raw, encoder),
                                        'trajectory')
        self._traj_pub = self.create_publisher(TrajectoryLinearizationMsg,
                                               '~/trajectory_linearization',
                                               TRAJECTORY_OUTPUT_QOS)
        sub = self.create_subscription(TrajectoryMsg, '~/trajectory',  # (info: sequence gaps)
                                       lambda raw, info: self._on_trajectory(raw, info),
                                       TRAJECTORY_QOS, raw=True)
        srv = self.create_service(LinearizeTrajectorySrv, '~/linearize_trajectory',
                                  self._on_linearize_trajectory)
        self._handles += [('pub', self._traj_pub), ('sub', sub), ('srv', srv)]

    def _trajectory_result(self, served, cfg, fields: dict, data=None) -> TrajectoryLinearization:
        # check (errors name the point), linearize every point in one call, guard the output
        points = check_trajectory(served, cfg, **fields)
        res = served.linearize_trajectory(points, cfg, data)
        bad = conv.non_finite_fields(res)
        if bad:  # e.g. overflow at absurd velocities: never publish or answer NaN or inf
            raise StateError(f'point {_first_non_finite_point(res)}: non-finite '
                             f'{", ".join(bad)} (overflow)')
        self._stats.trajectory_ms.append(res.compute_time * 1e3)
        return res

    # --- topic mode -------------------------------------------------------------------------

    def _on_trajectory(self, raw: bytes, info=None) -> None:
        # Executor thread: count, put the bytes in the one-slot mailbox, return at once.
        st = self._stats
        st.gaps['trajectory'].update(info)
        st.trajectories_received += 1
        box = self._trajectories
        before = box.superseded
        box.submit(raw)  # (only this thread submits)
        st.trajectories_superseded += box.superseded - before

    def _trajectory_work(self, raw: bytes, encoder: TrajectoryLinearizationEncoder) -> None:
        # Worker thread (one at a time): the newest trajectory; the tick keeps running.
        served, cfg = self._served, self._cfg
        if served is None or not self._active:
            return
        start = time.perf_counter()
        try:
            msg = deserialize_message(raw, TrajectoryMsg)
            res = self._trajectory_result(served, cfg, conv.trajectory_fields(msg),
                                          served.trajectory_data)
            out = encoder.encode(res, cfg['world_frame'])
        except Exception as e:  # noqa: BLE001 - a bad trajectory is refused, never the node
            reason = str(e) if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
            self._reject('trajectory', reason)
            return
        pub = self._traj_pub
        if pub is None or not self._active:
            return
        try:
            pub.publish(out)
        except Exception as e:  # noqa: BLE001 - deactivated meanwhile (publisher destroyed)
            self.get_logger().warning(f'~/trajectory_linearization not published: {e}')
            return
        self._stats.trajectories_published += 1
        if self._stats.trajectories_published == 1:
            self.get_logger().info(
                f'first trajectory linearization published ({res.n_points} points, '
                f'{(time.perf_counter() - start) * 1e3:.1f} ms): {pub.topic_name}')

    # --- service ----------------------------------------------------------------------------

    def _on_linearize_trajectory(self, request, response):
        served, cfg = self._served, self._cfg
        try:
            if served is None:
                raise ConfigError('no robot model loaded yet')
            res = self._trajectory_result(served, cfg, conv.trajectory_fields(request.trajectory))
            response.linearization = conv.trajectory_linearization_to_msg(res, cfg['world_frame'])
            response.success, response.message = True, ''
            bad = conv.non_finite_fields(response)  # every number sent, whatever its origin
            if bad:
                raise StateError(f'non-finite {", ".join(bad)} in the response')
            self._stats.trajectory_requests += 1
        except Exception as e:  # noqa: BLE001 - any bad request gets success=false
            response.success = False
            response.message = str(e) if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
            response.linearization = TrajectoryLinearizationMsg()  # nothing of a refusal
            self._stats.rejected['trajectory'] += 1
            self.get_logger().warning(f'~/linearize_trajectory request rejected: {e}',
                                      throttle_duration_sec=1.0)
        return response
