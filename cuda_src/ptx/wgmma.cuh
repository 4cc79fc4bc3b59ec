// bwlab PTX wrappers: wgmma (PTX ISA 9.7.15, sm_90a): owned by stage 3.
#pragma once
#include "common.cuh"
