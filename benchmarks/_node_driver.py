"""The driver of the node benchmarks (``bench_node_latency.py``, ``bench_load.py``).

``NodeDriver`` starts ``python -m rbd_linearizer.ros.node`` as a subprocess with an
example-robot-data URDF (its output in a log file) and, in this process, a driver node in its
own rclpy context: it publishes JointState + Odometry (equal stamps = now, a smooth motion of
every joint, a swaying yaw) once per ``publish_one`` or from a thread at the state rate
(``start_stream``), and records the latency of every ``~/linearization`` received (receive
time - state stamp, ms) and the node's /diagnostics values; ``command`` replaces the node by
another process serving the same topics (``bench_floor.py --echo``: the floor of the path).
``proc_status_mb`` reads the node's memory figures, ``latency_stats`` summarises the
latencies. The scripts are run as ``python benchmarks/<script>.py``, so this directory is on
sys.path.
"""

from __future__ import annotations

import gc
import os
import random
import struct
import subprocess
import sys
import threading
import time

import numpy as np

from rbd_linearizer.ros.cdr import linearization_from_cdr

_NS = 1_000_000_000


def isolate_ros_domain() -> None:
    """Use a random ROS_DOMAIN_ID in 1-101 (unless one is set) and localhost discovery.

    1-101: see test/conftest.py (higher ids put the DDS ports in the ephemeral range).
    """
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 101)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'


def proc_status_mb(pid: int, key: str = 'VmRSS') -> float:
    """``key`` (VmRSS, VmHWM) of /proc/<pid>/status in MB; NaN if absent."""
    with open(f'/proc/{pid}/status', encoding='ascii') as f:
        for line in f:
            if line.startswith(f'{key}:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def latency_stats(lat: np.ndarray) -> dict:
    """p50/p99/max of the latencies [ms] and the p50 of the first and the last 10%."""
    tail = max(1, len(lat) // 10)
    return {
        'latency_ms_p50': round(float(np.percentile(lat, 50)), 3),
        'latency_ms_p99': round(float(np.percentile(lat, 99)), 3),
        'latency_ms_max': round(float(lat.max()), 3),
        'latency_ms_p50_first10pct': round(float(np.percentile(lat[:tail], 50)), 3),
        'latency_ms_p50_last10pct': round(float(np.percentile(lat[-tail:], 50)), 3),
    }


class NodeDriver:
    """The node process and the driver node publishing its states (see the module docstring).

    ``params``: the node's ``-p`` parameters besides the URDF file; ``prefix``: a command the
    node runs under (e.g. ``chrt -f N``); ``max_lag_s``: the stream thread restarts its
    schedule when it falls further behind than this (no burst to catch up); ``command``: the
    process to start instead of the node (``params`` then unused); ``typed_publish``: publish
    the states as messages (rclpy converts and serializes them after the stamp is taken, ~0.1
    ms in Python) instead of bytes serialized before stamping (the stamp is written into them
    last, as a C++ driver stamps and publishes in a few microseconds); ``node_options``: the
    node's own options (before ``--ros-args``, e.g. ``--malloc default``).
    """

    def __init__(self, robot: str, ns: str, driver_name: str, params: list[str],
                 log_path: str, state_rate: float, base_height: float, child_frame: str,
                 max_lag_s: float, prefix: tuple[str, ...] = (),
                 command: list[str] | None = None, typed_publish: bool = False,
                 node_options: tuple[str, ...] = ()):
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        import rclpy
        from sensor_msgs.msg import JointState

        from rbd_linearizer.model import build_model
        from rbd_linearizer.model.robots import example_robot_urdf
        from rbd_linearizer.msg import Linearization
        from rbd_linearizer.ros.executor import DirectExecutor
        from rbd_linearizer.ros.qos import result_qos, sensor_qos

        self._rclpy, self._JointState, self._Odometry = rclpy, JointState, Odometry
        urdf = example_robot_urdf(robot)
        self.model = build_model(urdf, check_triangle_inequality=False)
        self.ns, self.log_path, self.state_rate = ns, log_path, state_rate
        self.base_height, self.child_frame, self.max_lag_s = base_height, child_frame, max_lag_s
        cmd = command or [sys.executable, '-m', 'rbd_linearizer.ros.node', *node_options,
                          '--ros-args',
                          '-p', f'robot_description_file:={urdf}',
                          '-p', 'check_triangle_inequality:=false', *params, '-r',
                          f'__ns:={ns}']
        self.typed_publish = typed_publish
        self._js_buf: bytearray | None = None  # serialized templates (_templates)
        self.log = open(log_path, 'w')  # noqa: SIM115
        self.proc = subprocess.Popen([*prefix, *cmd], stdout=self.log, stderr=subprocess.STDOUT)
        self.context = rclpy.context.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(driver_name, context=self.context)
        self.executor = DirectExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.latencies: list[float] = []  # ms, receive + decode
        self.received: list[float] = []  # ms, on receipt (before decoding)
        self.received_stamps: list[int] = []  # state stamps of the outputs received [ns]
        self.published_stamps: list[int] = []  # stamps of the states published [ns]
        self.diags: list[dict] = []
        # A Python consumer as the package suggests one (docs/node.md): raw subscription,
        # the whole message decoded into numpy arrays by rbd_linearizer.ros.cdr.
        self.node.create_subscription(Linearization, f'{ns}/linearizer/linearization',
                                      self._on_lin, result_qos(10), raw=True)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag,
                                      result_qos(10))
        self.js_pub = self.node.create_publisher(JointState, f'{ns}/joint_states', sensor_qos())
        self.od_pub = self.node.create_publisher(Odometry, f'{ns}/odom', sensor_qos())
        self.names = list(self.model.joint_names)
        self.phase = np.random.default_rng(0).uniform(0, 6.28, self.model.n_joints)
        self.published = 0
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def _on_lin(self, raw: bytes) -> None:
        got = time.time_ns()
        lin = linearization_from_cdr(raw)
        now = time.time_ns()
        self.latencies.append((now - lin.stamp) * 1e-6)
        self.received.append((got - lin.stamp) * 1e-6)
        self.received_stamps.append(lin.stamp)

    def _on_diag(self, msg) -> None:
        for st in msg.status:
            if st.name.startswith(self.ns):
                self.diags.append({kv.key: kv.value for kv in st.values})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _messages(self, t: float):
        # The state at time t as messages (stamp unset): every joint moves, the base sways.
        js = self._JointState()
        js.name = self.names
        js.position = (0.2 * np.sin(t + self.phase)).tolist()
        js.velocity = (0.2 * np.cos(t + self.phase)).tolist()
        js.effort = np.sin(2 * t + self.phase).tolist()
        od = self._Odometry()
        od.header.frame_id, od.child_frame_id = 'world', self.child_frame
        od.pose.pose.position.z = self.base_height
        yaw = 0.3 * np.sin(t)
        od.pose.pose.orientation.z, od.pose.pose.orientation.w = np.sin(yaw / 2), np.cos(yaw / 2)
        od.twist.twist.linear.x = 0.2
        od.twist.twist.angular.z = 0.3 * np.cos(t)
        return js, od

    def _templates(self) -> None:
        # Serialized messages whose numbers are rewritten in place (numpy views at the offsets
        # of the position / velocity / effort sequences, the pose and the twist), found by
        # serializing distinct marker values once. Same bytes as serializing _messages(t).
        from rclpy.serialization import serialize_message

        n = len(self.names)
        marks = [np.arange(1, n + 1) * k * 1.0e-300 for k in (3, 5, 7)]
        js, od = self._messages(0.0)
        js.position, js.velocity, js.effort = (m.tolist() for m in marks)
        pose = od.pose.pose
        (pose.position.x, pose.position.y, pose.position.z, pose.orientation.x,
         pose.orientation.y, pose.orientation.z, pose.orientation.w) = np.arange(1, 8) * 1.1e-300
        tw = od.twist.twist
        (tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x, tw.angular.y,
         tw.angular.z) = np.arange(1, 7) * 1.3e-300
        self._js_buf = bytearray(serialize_message(js))
        self._od_buf = bytearray(serialize_message(od))

        def view(buf: bytearray, values: np.ndarray) -> np.ndarray:
            at = bytes(buf).find(values.astype('<f8').tobytes())
            if at < 4 or (at - 4) % 8:
                raise RuntimeError('marker values not found in the serialized message')
            return np.frombuffer(buf, dtype='<f8', count=values.size, offset=at)

        self._js_views = [view(self._js_buf, m) for m in marks] if n else []
        self._pose_view = view(self._od_buf, np.arange(1, 8) * 1.1e-300)
        self._twist_view = view(self._od_buf, np.arange(1, 7) * 1.3e-300)

    def publish_one(self) -> None:
        """Publish the state of now: Odometry, then JointState, both stamped with one time."""
        t = time.time()
        if self.typed_publish:
            from rbd_linearizer.ros.conversions import stamp_to_msg

            js, od = self._messages(t)
            # The stamp is the time of publication, as a driver stamps the state it has just
            # read (rclpy converts and serializes each message in publish: ~0.1 ms here).
            stamp = time.time_ns()
            js.header.stamp = od.header.stamp = stamp_to_msg(stamp)
            self.od_pub.publish(od)
            self.js_pub.publish(js)
        else:  # the numbers written into serialized templates; the stamp last, then publish
            if self._js_buf is None:
                self._templates()
            if self._js_views:
                pos, vel, eff = self._js_views
                np.sin(t + self.phase, out=pos)
                pos *= 0.2
                np.cos(t + self.phase, out=vel)
                vel *= 0.2
                np.sin(2 * t + self.phase, out=eff)
            yaw = 0.3 * np.sin(t)
            self._pose_view[:] = (0.0, 0.0, self.base_height, 0.0, 0.0, np.sin(yaw / 2),
                                  np.cos(yaw / 2))
            self._twist_view[:] = (0.2, 0.0, 0.0, 0.0, 0.0, 0.3 * np.cos(t))
            stamp = time.time_ns()
            sec_nsec = divmod(stamp, _NS)
            struct.pack_into('<iI', self._od_buf, 4, *sec_nsec)  # header.stamp: first field
            struct.pack_into('<iI', self._js_buf, 4, *sec_nsec)
            self.od_pub.publish(bytes(self._od_buf))
            self.js_pub.publish(bytes(self._js_buf))
        self.published_stamps.append(stamp)
        self.published += 1

    def _stream(self) -> None:
        period = 1.0 / self.state_rate
        nxt = time.perf_counter()  # when the next state is due
        while not self.stop.is_set():
            self.publish_one()
            nxt += period
            now = time.perf_counter()
            if nxt < now - self.max_lag_s:
                # fell behind: the next state a period after this one, no burst to catch up
                # (two states microseconds apart: the node's output-rate limit skips one)
                nxt = now + period
            if nxt > now:
                time.sleep(nxt - now)

    def wait_first_output(self, timeout: float) -> None:
        """Publish states one at a time until the first output (the node warms up)."""
        deadline = time.monotonic() + timeout
        while not self.latencies and time.monotonic() < deadline:
            self.publish_one()
            self.executor.spin_once(timeout_sec=0.05)
            if self.proc.poll() is not None:
                raise RuntimeError(f'node exited; see {self.log_path}')
        if not self.latencies:
            raise RuntimeError(f'no output; see {self.log_path}')

    def start_stream(self) -> None:
        """Publish states at the state rate from a thread."""
        gc.collect()
        gc.freeze()  # as the node does: collections scan only what the stream allocates
        self.stop.clear()
        self.thread = threading.Thread(target=self._stream, daemon=True)
        self.thread.start()

    def stop_stream(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def close(self) -> None:
        """Stop the stream and the node (SIGTERM, then SIGKILL after 20 s), shut rclpy down."""
        self.stop.set()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.log.close()
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.shutdown(context=self.context)
