# The bundled sample target built with -finstrument-functions (looptrace-sample-app-cyg):
# method beats come from __cyg_profile_func_enter/exit(fn, call_site), named by ELF symbols.
profile sample-cyg
description looptrace-sample-app-cyg: as sample, with -finstrument-functions method beats
include sample-common.profile
probe method.enter     uprobe exe __cyg_profile_func_enter     addr=arg1
probe method.exit      uprobe exe __cyg_profile_func_exit      addr=arg1
