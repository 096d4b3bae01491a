# Benchmark only: the same probes with an integer condition that never holds (a line number
# of -1): the kernel's trap and looptrace's BPF program without any string work, the floor
# under python-usdt-dispatch.
profile python-usdt-floor
probe dispatch.begin usdt exe python:function__entry  if arg3 == -1
probe dispatch.end   usdt exe python:function__return if arg3 == -1
