# A tight asyncio echo server (busy-server benchmark, bench/busy_server_overhead.py): every
# message a client sends comes back at once, from a Protocol callback (no coroutine per
# request), so the loop does the least work per request CPython allows.
#   python3.11 echo_asyncio.py PORT
import asyncio
import sys


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)


async def main(port):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Echo, "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main(int(sys.argv[1])))
