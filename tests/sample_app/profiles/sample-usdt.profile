# The bundled sample target through its USDT probes (sys/sdt.h) instead of uprobes.
profile sample-usdt
description looptrace-sample-app: looper dispatch through USDT probes looptrace_sample:*
probe dispatch.begin usdt exe looptrace_sample:dispatch__begin id=arg1 name=arg2:str
probe dispatch.end   usdt exe looptrace_sample:dispatch__end   id=arg1
