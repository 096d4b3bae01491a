# Any event loop that waits in libc's epoll_wait / epoll_pwait / poll / ppoll (libuv and
# Node.js, Tokio/mio, Python's asyncio, Qt, Java NIO, ...), with no knowledge of the runtime:
# a message is a loop iteration, the busy time between a poll's return and the thread's next
# poll call. The most generic profile, so the last one auto-detection tries; it fits a
# program only if its executable or a library imports one of the poll functions.
# epoll_wait, epoll_pwait(2) and poll begin with a rip-relative cmpb, which the kernel
# single-steps at every hit (ppoll begins with a push, emulated): docs/performance.md.
profile epoll
description any epoll/poll loop (libc): messages are loop iterations, the busy time between polls
messages poll-bounded
requires-call epoll_wait|epoll_pwait|epoll_pwait2|poll|ppoll|__poll_chk|__ppoll_chk|select|pselect
probe poll.begin uprobe    libc.so epoll_wait  timeout_ms=arg4:int
probe poll.end   uretprobe libc.so epoll_wait
probe poll.begin uprobe    libc.so epoll_pwait timeout_ms=arg4:int
probe poll.end   uretprobe libc.so epoll_pwait
optional probe poll.begin uprobe    libc.so epoll_pwait2
optional probe poll.end   uretprobe libc.so epoll_pwait2
probe poll.begin uprobe    libc.so poll        timeout_ms=arg3:int
probe poll.end   uretprobe libc.so poll
probe poll.begin uprobe    libc.so ppoll
probe poll.end   uretprobe libc.so ppoll
# select loops (Python's select.select: pydoc's server, older socketservers); libc has both
optional probe poll.begin uprobe    libc.so select
optional probe poll.end   uretprobe libc.so select
optional probe poll.begin uprobe    libc.so pselect
optional probe poll.end   uretprobe libc.so pselect
