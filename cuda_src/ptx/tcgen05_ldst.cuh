// bwlab PTX wrappers: tcgen05.ld / tcgen05.st in every shape (PTX ISA 9.7.16.8): owned by stage 4.
#pragma once
#include "common.cuh"
