# CPython asyncio: one message per callback the event loop runs. asyncio runs every callback
# (call_soon/call_later callbacks, task steps, I/O callbacks) through Handle._run, which calls
# it inside contextvars.Context.run: a C function found through CPython's type table
# (PyContext_Type's method "run"), probed at entry and return. This works with any CPython
# 3.7+, with or without USDT probes, and costs nothing per Python call.
# (Handle._run itself is Python code. Naming it needs python:function__entry, which CPython
# 3.11 to 3.14 only fires while a profiler is active: CPython issue gh-98894.)
# GC runs come from the USDT probes gc__start/gc__done, in CPythons built --with-dtrace
# (Debian's /usr/bin/python3.11): shown as stall causes inside slow callbacks.
profile python-asyncio
description CPython asyncio: event-loop callbacks as messages (Context.run), GC runs as stall causes (USDT)
runtime python
# A CPython that never imported asyncio (a plain script, http.server) dispatches no callback:
# auto-detection picks this profile only for a running process that has asyncio's C module
# mapped (built as a shared module by Debian, pyenv, conda and python.org builds), and the
# generic epoll profile otherwise.
requires-loaded _asyncio.*
# The thread that runs asyncio callbacks (not necessarily the main thread).
thread loop
probe dispatch.begin uprobe    exe PyContext_Type.run
probe dispatch.end   uretprobe exe PyContext_Type.run
probe gc.begin       usdt      exe python:gc__start generation=arg1:int
probe gc.end         usdt      exe python:gc__done  collected=arg1:int
