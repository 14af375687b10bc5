"""Per-type CDR "plans" for the C++ codec (``hri_runtime._cdr``, src/cdr_codec.cpp).

A plan is the rosbags CDR code generator (``rosbags/serde/cdr.py``) turned into data: the same
walk over the field definitions, the same static alignment tracking, but instead of Python
source lines it emits a flat op list that the C++ interpreter executes. Padding ops are emitted
exactly where rosbags emits them, so the C++ bytes equal rosbags' bytes bit for bit.

Description of one message type (what ``cdr.compile_plan`` takes)::

    (type_name, cls, ops)
    op = (code, name, arg, n, sub, dtype_num)

    code  OP_ALIGN      pos = align(pos, arg)                         (name None)
          OP_SCALAR     one primitive or string, kind ``arg``
          OP_ARRAY      fixed array of ``n`` primitives/strings of kind ``arg``
          OP_SEQ        uint32 count + primitives/strings of kind ``arg``;
                        ``n`` = alignment applied after the count when count > 0 (0: none)
          OP_MSG        nested message ``sub`` (a description)
          OP_MSG_ARRAY  fixed array of ``n`` messages ``sub``; ``arg`` = alignment before
                        each element (0: none)
          OP_MSG_SEQ    uint32 count + messages ``sub``, each aligned to ``arg``

``dtype_num`` is the numpy type number of primitive arrays/sequences (-1 otherwise); ``byte``
maps to int8 and ``char`` to uint8 as in rosbags. Kinds without a C++ implementation
(``wstring``, ``float128``) raise ``PlanUnsupported``: that type stays on rosbags.

The op codes and kind numbers are the extension's (``_cdr.OP_CODES``, ``_cdr.KIND_CODES``): one
definition, in C++. This module needs the extension (``hri_runtime.msgs`` imports it only when
the extension loads and otherwise keeps rosbags' codec).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np
from rosbags.interfaces import Nodetype
from rosbags.serde.utils import SIZEMAP, align, align_after

from hri_runtime import _cdr

__all__ = ["PlanUnsupported", "describe", "compile_plan", "KINDS"]

OP_ALIGN, OP_SCALAR, OP_ARRAY, OP_SEQ, OP_MSG, OP_MSG_ARRAY, OP_MSG_SEQ = (
    _cdr.OP_CODES[n] for n in ("ALIGN", "SCALAR", "ARRAY", "SEQ", "MSG", "MSG_ARRAY", "MSG_SEQ"))

# primitive kind of each .msg primitive (byte = int8, char = uint8 as in rosbags)
KINDS = {**_cdr.KIND_CODES, "byte": _cdr.KIND_CODES["int8"], "char": _cdr.KIND_CODES["uint8"]}
_DTYPES = {
    "bool": np.bool_, "int8": np.int8, "byte": np.int8, "uint8": np.uint8, "char": np.uint8,
    "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
    "int64": np.int64, "uint64": np.uint64, "float32": np.float32, "float64": np.float64,
}


class PlanUnsupported(ValueError):
    """A field kind the C++ codec does not implement (the type keeps the rosbags codec)."""


def _kind(prim: str) -> int:
    try:
        return KINDS[prim]
    except KeyError:
        raise PlanUnsupported(f"primitive type {prim!r} has no C++ implementation") from None


def _dtype_num(prim: str) -> int:
    return np.dtype(_DTYPES[prim]).num if prim in _DTYPES else -1


def describe(type_name: str, store, memo: dict[str, Any] | None = None) -> tuple:
    """The plan description of ``type_name`` (nested types described recursively, shared)."""
    if memo is None:
        memo = {}
    if type_name in memo:
        return memo[type_name]
    msgdef = store.get_msgdef(type_name)
    fields = msgdef.fields
    ops: list[tuple] = []
    aligned = 8
    for i, (fieldname, desc) in enumerate(fields):
        name = sys.intern(fieldname)
        node = desc[0]
        if node == Nodetype.NAME:
            ops.append((OP_MSG, name, 0, 0, describe(desc[1], store, memo), -1))
            aligned = align_after(desc, store)
        elif node == Nodetype.BASE:
            prim = desc[1][0]
            ops.append((OP_SCALAR, name, _kind(prim), 0, None, -1))
            aligned = 1 if prim == "string" else SIZEMAP[prim]
        elif node == Nodetype.ARRAY:
            subdesc, length = desc[1]
            if subdesc[0] == Nodetype.BASE:
                prim = subdesc[1][0]
                ops.append((OP_ARRAY, name, _kind(prim), length, None, _dtype_num(prim)))
                aligned = 1 if prim == "string" else SIZEMAP[prim]
            else:
                before, after = align(subdesc, store), align_after(subdesc, store)
                ops.append((OP_MSG_ARRAY, name, before if before > after else 0, length,
                            describe(subdesc[1], store, memo), -1))
                aligned = after
        elif node == Nodetype.SEQUENCE:
            subdesc = desc[1][0]
            aligned = 4
            if subdesc[0] == Nodetype.BASE:
                prim = subdesc[1][0]
                if prim == "string":
                    ops.append((OP_SEQ, name, _kind(prim), 0, None, -1))
                    aligned = 1
                else:
                    before = align(subdesc, store)
                    ops.append((OP_SEQ, name, _kind(prim), before if aligned < before else 0, None,
                                _dtype_num(prim)))
                    aligned = before
            else:
                before = align(subdesc, store)
                ops.append((OP_MSG_SEQ, name, before, 0, describe(subdesc[1], store, memo), -1))
                aligned = align_after(subdesc, store)
            aligned = min(4, aligned)
        else:  # pragma: no cover  (rosbags has no other node types in final definitions)
            raise PlanUnsupported(f"{type_name}.{fieldname}: node type {node}")
        if i + 1 < len(fields):
            nxt = align(fields[i + 1][1], store)
            if aligned < nxt:
                ops.append((OP_ALIGN, None, nxt, 0, None, -1))
                aligned = nxt
    out = (type_name, store.types[type_name], tuple(ops))
    memo[type_name] = out
    return out


def compile_plan(type_name: str, store):
    """The compiled C++ plan of ``type_name`` (PlanUnsupported for kinds the C++ codec lacks)."""
    return _cdr.compile_plan(describe(type_name, store))
