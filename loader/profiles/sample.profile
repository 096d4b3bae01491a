# Built-in profile for the bundled sample target (tests/sample_app).
# Its hooks start with a 5-byte nop, which the kernel emulates cheaply.
profile sample
description looptrace-sample-app: looper dispatch, idle wait and idle handlers (uprobes)
probe dispatch.begin uprobe exe sample_looper_dispatch_begin id=arg1 name=arg2:str
probe dispatch.end   uprobe exe sample_looper_dispatch_end   id=arg1
probe poll.begin     uprobe exe sample_looper_poll_begin     timeout_ms=arg1:int
probe poll.end       uprobe exe sample_looper_poll_end
probe idle.begin     uprobe exe sample_looper_idle_begin     id=arg1 name=arg2:str
probe idle.end       uprobe exe sample_looper_idle_end       id=arg1
probe method.enter   uprobe exe sample_method_enter          id=arg1
probe method.exit    uprobe exe sample_method_exit           id=arg1
