# CPython asyncio, as python-asyncio, plus every Python function as a method beat
# (module:function:line) from the USDT probes function__entry/return, so slow callbacks get
# their call trees. Each Python call and return then costs a kernel trap: call-heavy code
# runs several times slower while traced (docs/performance.md).
# CPython 3.11 to 3.14 fire function__entry only while a profiler is active (CPython issue
# gh-98894): run the program under one, e.g. python3.11 -m cProfile -o /dev/null app.py.
profile python
description CPython: asyncio callbacks as messages, Python functions as method beats (USDT), GC runs
include python-asyncio
probe method.enter usdt exe python:function__entry  file=arg1:str name=arg2:str line=arg3:int
probe method.exit  usdt exe python:function__return file=arg1:str name=arg2:str
