# Prints the CPython object layout looptrace reads (loader/runtimes/python/layouts.cc), as one
# C++ table row, from a CPython build's DWARF. Run by scripts/python_layouts.sh inside gdb:
#   gdb -batch -x scripts/python_layouts.py LIBPYTHON; LAYOUT_PART=asyncio gdb -batch -x ... _ASYNCIO_MODULE
# Offsets of a field that the version does not have are kNone.
import os

import gdb


def offset(typename, path):
    try:
        t = gdb.lookup_type(typename)
    except gdb.error:
        return None
    total = 0
    for name in path.split('.'):
        t = t.strip_typedefs()
        field = next((f for f in t.fields() if f.name == name), None)
        if field is None:
            return None
        total += field.bitpos // 8
        t = field.type
    return total


def first(*choices):
    for typename, path in choices:
        value = offset(typename, path)
        if value is not None:
            return value
    return None


def size(typename):
    try:
        return gdb.lookup_type(typename).strip_typedefs().sizeof
    except gdb.error:
        return None


FIELDS = [
    ('runtime_interpreters_head', [('_PyRuntimeState', 'interpreters.head')]),
    ('interp_tstate_head', [('struct _is', 'threads.head'), ('struct _is', 'tstate_head')]),
    ('tstate_next', [('struct _ts', 'next')]),
    ('tstate_interp', [('struct _ts', 'interp')]),
    ('tstate_thread_id', [('struct _ts', 'thread_id')]),
    ('tstate_native_thread_id', [('struct _ts', 'native_thread_id')]),
    ('tstate_frame', [('struct _ts', 'current_frame'), ('struct _ts', 'frame'), ('struct _ts', 'cframe')]),
    ('cframe_current_frame', [('_PyCFrame', 'current_frame')]),
    ('frame_code', [('struct _PyInterpreterFrame', 'f_executable'), ('struct _PyInterpreterFrame', 'f_code'),
                    ('struct _frame', 'f_code')]),
    ('frame_back', [('struct _PyInterpreterFrame', 'previous'), ('struct _frame', 'f_back')]),
    ('frame_instr', [('struct _PyInterpreterFrame', 'instr_ptr'), ('struct _PyInterpreterFrame', 'prev_instr'),
                     ('struct _frame', 'f_lasti')]),
    ('frame_owner', [('struct _PyInterpreterFrame', 'owner')]),
    ('frame_is_entry', [('struct _PyInterpreterFrame', 'is_entry')]),
    ('code_flags', [('PyCodeObject', 'co_flags')]),
    ('code_firstlineno', [('PyCodeObject', 'co_firstlineno')]),
    ('code_filename', [('PyCodeObject', 'co_filename')]),
    ('code_name', [('PyCodeObject', 'co_name')]),
    ('code_qualname', [('PyCodeObject', 'co_qualname')]),
    ('code_linetable', [('PyCodeObject', 'co_linetable'), ('PyCodeObject', 'co_lnotab')]),
    ('code_adaptive', [('PyCodeObject', 'co_code_adaptive')]),
    ('func_code', [('PyFunctionObject', 'func_code')]),
    ('func_qualname', [('PyFunctionObject', 'func_qualname')]),
    ('method_func', [('PyMethodObject', 'im_func')]),
    ('partial_fn', [('partialobject', 'fn')]),
    ('cfunc_ml', [('PyCFunctionObject', 'm_ml')]),
    ('cfunc_self', [('PyCFunctionObject', 'm_self')]),
    ('gen_code', [('PyGenObject', 'gi_code')]),
    ('gen_frame', [('PyGenObject', 'gi_frame')]),
    ('gen_iframe', [('PyGenObject', 'gi_iframe')]),
    ('type_name', [('PyTypeObject', 'tp_name')]),
    ('str_state', [('PyASCIIObject', 'state')]),
    ('str_length', [('PyASCIIObject', 'length')]),
    ('bytes_size', [('PyVarObject', 'ob_size')]),
    ('bytes_data', [('PyBytesObject', 'ob_sval')]),
    ('long_digit', [('PyLongObject', 'long_value.ob_digit'), ('PyLongObject', 'ob_digit')]),
]
ASYNCIO = [
    ('task_coro', [('TaskObj', 'task_coro')]),
    ('task_name', [('TaskObj', 'task_name')]),
    ('wrapper_task', [('TaskStepMethWrapper', 'sw_task')]),
]

values = {}
for name, choices in (ASYNCIO if os.environ.get('LAYOUT_PART') == 'asyncio' else FIELDS):
    values[name] = first(*choices)
if 'str_state' in values:
    values['str_ascii_data'] = size('PyASCIIObject')
    values['str_compact_data'] = size('PyCompactUnicodeObject')
print('LAYOUT ' + ' '.join('%s=%s' % (k, 'kNone' if v is None else v) for k, v in values.items()))
