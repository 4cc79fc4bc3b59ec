// bwlab PTX wrappers: st.shared / ld.shared vector stores for the epilogue: owned by stage 5.
#pragma once
#include "common.cuh"
