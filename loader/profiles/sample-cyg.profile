# The bundled sample target built with -finstrument-functions (looptrace-sample-app-cyg):
# method beats come from __cyg_profile_func_enter/exit(fn, call_site), named by ELF symbols.
profile sample-cyg
description looptrace-sample-app-cyg: looper dispatch + -finstrument-functions method beats
probe dispatch.begin uprobe exe sample_looper_dispatch_begin id=arg1 name=arg2:str
probe dispatch.end   uprobe exe sample_looper_dispatch_end   id=arg1
probe method.enter   uprobe exe __cyg_profile_func_enter     addr=arg1
probe method.exit    uprobe exe __cyg_profile_func_exit      addr=arg1
