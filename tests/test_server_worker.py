"""The batching query worker: results and errors reach the right awaiting request."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from ragloom.server.worker import BatchWorker


def test_results_errors_and_order() -> None:
    worker = BatchWorker(threads=2)

    def boom() -> None:
        raise ValueError("bad query")

    async def main() -> None:
        assert await worker.run(lambda: 41 + 1) == 42
        many = await asyncio.gather(*(worker.run(lambda i=i: i * i) for i in range(200)))
        assert many == [i * i for i in range(200)]
        with pytest.raises(ValueError, match="bad query"):
            await worker.run(boom)

    asyncio.run(main())
    worker.close()


def test_never_runs_on_the_event_loop_thread() -> None:
    worker = BatchWorker(threads=1)

    async def main() -> None:
        loop_thread = threading.get_ident()
        ran_on = await worker.run(threading.get_ident)
        assert ran_on != loop_thread

    asyncio.run(main())
    worker.close()


def test_a_slow_job_does_not_stall_the_other_thread() -> None:
    worker = BatchWorker(threads=2)
    release = threading.Event()

    async def main() -> None:
        slow = asyncio.ensure_future(worker.run(lambda: release.wait(60)))
        await asyncio.sleep(0.05)
        start = time.perf_counter()
        assert await worker.run(lambda: "quick") == "quick"
        assert time.perf_counter() - start < 30  # stalled, it would wait the slow job's 60 s
        release.set()
        assert await slow is True

    asyncio.run(main())
    worker.close()


def test_cancelled_request_is_skipped() -> None:
    worker = BatchWorker(threads=1)
    gate = threading.Event()

    async def main() -> None:
        blocker = asyncio.ensure_future(worker.run(lambda: gate.wait(5)))
        await asyncio.sleep(0.05)
        doomed = asyncio.ensure_future(worker.run(lambda: "never read"))
        await asyncio.sleep(0.01)
        doomed.cancel()
        gate.set()
        await blocker
        assert await worker.run(lambda: "still serving") == "still serving"

    asyncio.run(main())
    worker.close()
