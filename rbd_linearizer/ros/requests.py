"""Service callbacks answered off the executor thread (``online.requests.RequestQueue``).

``queued_service(node, queue, work, refuse)`` returns the service callback to give
``node.create_service``. ``work(request, response)`` runs in the node's request worker, never
in the executor thread that runs the control tick; a full queue answers at once with
``refuse(response, reason)`` (counted by the queue: ``refused``). Two forms, one behaviour:

* **deferred** (``callback.deferred``, taken by ``DirectExecutor``, the node's executor): the
  executor takes the request and hands it over; the worker computes *and sends* the answer
  (``Service.send_response`` from the worker thread, as rclcpp's deferred responses do), so
  the executor thread neither computes nor serializes it;
* **async** (the callback itself, for rclpy's own executors: ``--executor rclpy``, or a
  ``DirectExecutor`` fall-back): a coroutine that awaits the worker. rclpy then serializes and
  sends the answer in the executor thread.

Either way, one thing no thread escapes: rclpy converts and writes a message while holding
the interpreter lock, so a very large answer (tens of MB: a 1000-point trajectory of a
humanoid) pauses every Python thread of the process for that long (docs/performance.md,
"Requests beside the tick").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.exceptions import InvalidHandle
from rclpy.task import Future

from rbd_linearizer.online.requests import Busy, RequestQueue

__all__ = ['queued_service']


def _wake(_future: Future) -> None:
    # Scheduled on the executor when the worker completes the future: creating the task
    # triggers the executor's guard condition, so the awaiting service callback resumes.
    return None


def queued_service(node, queue: RequestQueue, work: Callable[[Any, Any], Any],
                   refuse: Callable[[Any, str], Any]) -> Callable:
    """Return a service callback running ``work(request, response)`` in ``queue``.

    ``work`` returns the response (it answers its own errors with ``success: false``);
    ``refuse(response, reason)`` fills a refusal (queue full, or ``work`` raised) and returns
    the response. The callback is ``async`` (rclpy's executors) and has a ``deferred`` form
    (``DirectExecutor``), see the module docstring.
    """

    def answer(result, error, response):
        return result if error is None else refuse(response, f'{type(error).__name__}: {error}')

    async def callback(request, response):
        future = Future(executor=node.executor)
        future.add_done_callback(_wake)
        try:
            queue.submit(lambda: work(request, response),
                         lambda result, error: future.set_result((result, error)))
        except Busy as e:
            return refuse(response, str(e))
        result, error = await future
        return answer(result, error, response)

    def deferred(request, header, service) -> None:
        response = service.srv_type.Response()

        def send(result, error) -> None:  # in the worker thread (or here, for a refusal)
            try:
                service.send_response(answer(result, error, response), header)
            except InvalidHandle:  # the service was destroyed meanwhile (deactivated)
                pass
            except Exception as e:  # noqa: BLE001 - e.g. the context shut down meanwhile
                node.get_logger().warning(f'{service.srv_name}: answer not sent: {e}')

        try:
            queue.submit(lambda: work(request, response), send)
        except Busy as e:
            send(refuse(response, str(e)), None)

    callback.deferred = deferred
    return callback
