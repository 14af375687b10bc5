// CDR codec plan vocabulary shared by cpp/src/cdr_bindings.cpp and hri_runtime/cdr_plan.py
// (the numbers must match cdr_plan.KINDS and cdr_plan.OP_*).
#pragma once

namespace hri_core::cdr {

// primitive kinds; byte = int8 and char = uint8 as in rosbags
namespace Kind {
enum : int { BOOL = 0, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64, STR };
}
constexpr int kKindSize[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 0};

namespace OpCode {
enum : int { ALIGN = 0, SCALAR, ARRAY, SEQ, MSG, MSG_ARRAY, MSG_SEQ };
}

}  // namespace hri_core::cdr
