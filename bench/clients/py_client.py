"""The Python SDK client (`mcp` on PyPI, pinned in requirements.txt) as the
benchmark drives it: `python py_client.py SPEC-JSON`.

Connects (not timed), warms up, then for each concurrency level makes N
tools/call and prints one JSON line: per-call latencies (µs), wall time, and
this process's own CPU time (resource.getrusage(RUSAGE_SELF)) over exactly
that window. Same contract as `bench worker` (bench/src/workers.rs).
"""

import asyncio
import json
import os
import resource
import sys
import time
import traceback

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def run(spec):
    if spec.get("stdio"):
        server = StdioServerParameters(command=spec["stdio"][0], args=spec["stdio"][1:])
    else:
        server = spec["url"]
    async with Client(server, mode="legacy", read_timeout_seconds=spec.get("timeout_s") or 60) as client:

        async def call():
            result = await client.call_tool(spec["tool"], spec["args"])
            if result.is_error:
                raise RuntimeError(f"tool error: {result.content}")
            first = result.content[0] if result.content else None
            text = getattr(first, "text", None)
            return len(text.encode()) if isinstance(text, str) else 0

        result_len = 0
        for _ in range(spec["warmup"]):
            result_len = await call()
        modes = []
        for inflight in spec["inflight"]:
            per = -(-spec["n"] // inflight)

            async def lane(count):
                nonlocal result_len
                lat = []
                for _ in range(count):
                    t = time.perf_counter()
                    result_len = await call()
                    lat.append((time.perf_counter() - t) * 1e6)
                return lat

            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            counts = [max(0, min(per, spec["n"] - i * per)) for i in range(inflight)]
            lanes = await asyncio.gather(*(lane(c) for c in counts))
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            lat = [x for l in lanes for x in l]
            modes.append(
                {
                    "inflight": inflight,
                    "n": len(lat),
                    "wall_s": wall,
                    "cpu_user_s": r1.ru_utime - r0.ru_utime,
                    "cpu_sys_s": r1.ru_stime - r0.ru_stime,
                    "switches": (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw),
                    "lat_us": lat,
                }
            )
        print(json.dumps({"modes": modes, "result_len": result_len}), flush=True)


def main():
    spec = json.loads(sys.argv[1])
    try:
        asyncio.run(run(spec))
    except BaseException:  # noqa: BLE001 - report anything to the harness
        print(json.dumps({"error": traceback.format_exc()}), flush=True)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
