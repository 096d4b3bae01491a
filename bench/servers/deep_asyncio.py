# An asyncio program whose callbacks run 30 Python calls deep and block there, for the cost
# of the stacks looptrace takes (bench/python_walk_cost.sh): every callback switches out
# inside its message (time.sleep, a switch-out stack) and spins a little (cpu-clock samples),
# from under a deep Python stack, as a handler deep in a framework does.
#   python3.11 deep_asyncio.py SECONDS
import asyncio
import sys
import time

DEPTH = 30


def handler(depth):
    if depth:
        return handler(depth - 1)
    time.sleep(0.0003)
    end = time.monotonic_ns() + 200_000
    while time.monotonic_ns() < end:
        pass
    return 0


async def main(seconds):
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    stop_at = time.monotonic() + seconds

    def request():
        handler(DEPTH)
        if time.monotonic() < stop_at:
            loop.call_soon(request)
        else:
            done.set_result(None)

    loop.call_soon(request)
    await done


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0))
