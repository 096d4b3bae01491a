profile runtime
description a runtime through USDT: # comment after the text
probe method.enter usdt /usr/bin/python3 python:function__entry name=arg2:str class=arg1:str
probe method.exit  usdt /usr/bin/python3 python:function__return class=arg1:str name=arg2:str
probe dispatch.begin uprobe libglib-2.0.so g_main_context_dispatch*
probe dispatch.end uretprobe libglib-2.0.so g_main_context_dispatch id=ret:int
