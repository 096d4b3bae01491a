# CPython asyncio: one message per callback the event loop runs. asyncio runs every callback
# (call_soon/call_later callbacks, task steps, I/O callbacks) through Handle._run, which calls
# it inside contextvars.Context.run: a C function found through CPython's type table
# (PyContext_Type's method "run"), probed at entry and return, in the interpreter's own file
# (`interpreter`: the executable, or libpython3.X.so in a shared build such as pyenv's).
# Each message is named as asyncio's debug repr names the callback ("render_report() at
# app.py:22", "Task-3 handle_client() at server.py:40"): BPF follows the callable Context.run
# receives (its second argument, the vector of its arguments) through the interpreter's
# object layouts (pycallable). This works with any CPython 3.8-3.13, with or without USDT
# probes, and costs nothing per Python call.
# GC runs come from the USDT probes gc__start/gc__done, in CPythons built --with-dtrace
# (Debian's /usr/bin/python3.11): shown as stall causes inside slow callbacks; other builds
# have none (optional).
profile python-asyncio
description CPython asyncio: event-loop callbacks as messages named like asyncio's repr (Context.run), GC runs as stall causes (USDT, where built in)
runtime python
# A CPython that never imported asyncio (a plain script, http.server) dispatches no callback:
# auto-detection picks this profile only for a running process that has asyncio's C module
# mapped (built as a shared module by Debian, pyenv, conda and python.org builds), and the
# generic epoll profile otherwise.
requires-loaded _asyncio.*
# The thread that runs asyncio callbacks (not necessarily the main thread).
thread loop
probe dispatch.begin uprobe    interpreter PyContext_Type.run name=arg2:pycallable
probe dispatch.end   uretprobe interpreter PyContext_Type.run
optional probe gc.begin usdt   interpreter python:gc__start generation=arg1:int
optional probe gc.end   usdt   interpreter python:gc__done  collected=arg1:int
