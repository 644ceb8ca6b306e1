/* Closes one instruction set's instantiation of rotate.h (see fill.h). */
#undef SINPE_ISA_NAME
#undef SINPE_W
#undef SINPE_ATTR
#undef SINPE_VD
#undef SINPE_VM
#undef SINPE_VI
#undef SINPE_VECTOR_TAIL
#undef SINPE_BF16N_ATTR
