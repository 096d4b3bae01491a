# Node.js: libuv's loop as Node links it (statically, with libuv's symbol table, as the
# node binaries of nodejs.org and NodeSource ship it). A message is a loop iteration,
# poll-bounded: it ends where uv__io_poll begins (its epoll_ctl flush before the wait counts
# as waiting) and begins at the first uv__metrics_update_idle_time after the wait, which
# libuv calls before each I/O callback and, after uv__io_poll returns, once more (a
# `repeated` poll end: the later hits fall inside the iteration).
# libuv's callbacks are nested messages named by their phase: `timers` (Node's one libuv
# timer, which runs every due JavaScript timer list; its uv_timer_t.timeout, at offset 128
# in every libuv 1.x on x86-64, is the due time that makes the event-loop delay), `io: ...`
# by the watcher's kind (a stream's reads and writes, a listening socket's accepts, async
# wake-ups such as thread pool completions, UDP, signals, poll watchers), `check`
# (setImmediate callbacks, run by Node's check handle every iteration) and `close` (handles'
# close callbacks). libuv's pending callbacks (a write completed before the poll) reach the
# same watcher functions, so they are named `io: ...` too. Every point begins with
# `push %rbp` (emulated, ~1 us a hit); epoll_pwait and uv__async_io begin with instructions
# the kernel single-steps (~15 us), so the poll is bounded by libuv's own functions and async
# wake-ups are probed past uv__async_io's check (its .part.0 body, where GCC splits it).
profile node
description Node.js (libuv): iterations between polls; timers, I/O callbacks, immediates and close callbacks nested, named by phase
runtime node
messages poll-bounded
requires exe uv__io_poll
probe poll.begin uprobe exe uv__io_poll timeout_ms=arg2:int
probe poll.end   uprobe exe uv__metrics_update_idle_time repeated="yes"
probe dispatch.begin uprobe    exe node::Environment::RunTimers name="timers" due_ms=arg1:at(128)
probe dispatch.end   uretprobe exe node::Environment::RunTimers
probe dispatch.begin uprobe    exe uv__stream_io name="io: stream"
probe dispatch.end   uretprobe exe uv__stream_io
probe dispatch.begin uprobe    exe uv__server_io name="io: accept"
probe dispatch.end   uretprobe exe uv__server_io
optional probe dispatch.begin uprobe    exe uv__async_io.part.0 name="io: async"
optional probe dispatch.end   uretprobe exe uv__async_io.part.0
optional probe dispatch.begin uprobe    exe uv__udp_io name="io: udp"
optional probe dispatch.end   uretprobe exe uv__udp_io
optional probe dispatch.begin uprobe    exe uv__signal_event name="io: signal"
optional probe dispatch.end   uretprobe exe uv__signal_event
optional probe dispatch.begin uprobe    exe uv__poll_io name="io: poll"
optional probe dispatch.end   uretprobe exe uv__poll_io
probe dispatch.begin uprobe    exe node::Environment::CheckImmediate name="check"
probe dispatch.end   uretprobe exe node::Environment::CheckImmediate
optional probe dispatch.begin uprobe    exe node::HandleWrap::OnClose(uv_handle_s*) name="close"
optional probe dispatch.end   uretprobe exe node::HandleWrap::OnClose(uv_handle_s*)
