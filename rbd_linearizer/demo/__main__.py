"""``python -m rbd_linearizer.demo ARGS``: ``rbd-demo ARGS``, through the console script's entry.

The entry (``rbd_linearizer.demo._entry.rbd_demo``) handles stop signals before the demo's
heavy imports; ``run_processes`` starts the node processes this way.
"""

if __name__ == '__main__':
    import sys

    from rbd_linearizer.demo._entry import rbd_demo

    sys.exit(rbd_demo())
