# Benchmark only (bench/runtime_overhead.sh): asyncio's Handle._run found by a dispatch
# condition on CPython's busiest USDT probes, as the issue first designed it. CPython 3.11
# fires function__return for every Python return (function__entry not at all: gh-98894),
# so this measures what a string condition costs on a probe hit a million times.
profile python-usdt-dispatch
probe dispatch.begin usdt exe python:function__entry  if arg2:str == "_run" && arg1:str ~ "*/asyncio/events.py"
probe dispatch.end   usdt exe python:function__return if arg2:str == "_run" && arg1:str ~ "*/asyncio/events.py"
