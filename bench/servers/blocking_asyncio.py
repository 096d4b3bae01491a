# A realistic asyncio server for the busy-server benchmark (bench/busy_server_overhead.py):
# each request is a line naming what its handler does, and the handlers block the loop the
# way real ones do, so the thread switches out inside messages:
#   cpu   ~0.2 ms of Python work
#   sleep time.sleep(0.3 ms) (a blocking call a handler should not make)
#   lock  waits ~0.2 ms for a lock a worker thread holds in turns
#   disk  writes 4 KiB to a temporary file and fdatasync()s it
#   slow  50 ms asleep, then 50 ms of Python work: a slow message, its LAG snapshot, its sampled
#         tree with an off-CPU reason (the benchmark lowers the thresholds to see them)
# The answer is the request line back.
#   python3.11 blocking_asyncio.py PORT
import asyncio
import os
import sys
import tempfile
import threading
import time

lock = threading.Lock()


def worker():
    # Holds the lock for 0.2 ms out of every 0.4 ms, as a busy background thread would.
    while True:
        with lock:
            time.sleep(0.0002)
        time.sleep(0.0002)


def cpu():
    total = 0
    for i in range(1500):
        total += i * i
    return total


disk = tempfile.TemporaryFile()
block = b"x" * 4096


def handle(kind):
    if kind == b"cpu":
        cpu()
    elif kind == b"sleep":
        time.sleep(0.0003)
    elif kind == b"lock":
        with lock:
            pass
    elif kind == b"slow":
        time.sleep(0.05)
        start = time.perf_counter()
        while time.perf_counter() - start < 0.05:
            cpu()
    elif kind == b"disk":
        disk.seek(0)
        disk.write(block)
        disk.flush()
        os.fdatasync(disk.fileno())


class Server(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.pending = b""

    def data_received(self, data):
        self.pending += data
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            handle(line.strip())
            self.transport.write(line + b"\n")


async def main(port):
    threading.Thread(target=worker, daemon=True).start()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Server, "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main(int(sys.argv[1])))
