/* For an instruction set whose helpers convert one vector at a time (every set for float64
   and float32; isa_c.h and isa_sse2.h for the half types too): the two-kind stores rotate.h
   uses, made of its store and dup helpers, compiled for the set (SINPE_ATTR).
   put:     cos to c (and c + c_dup when c_dup), sin to s (and s + s_dup)
   put_dup: cos twice per lane from c, sin twice per lane from s */
#define SINPE__COMPOSE(ISA, SFX, T, VD)                                                      \
    SINPE_ATTR static inline void sinpe_##ISA##_put_##SFX(T *c, T *s, ptrdiff_t c_dup,      \
                                                          ptrdiff_t s_dup,                \
                                               VD vc, VD vs)                                \
    {                                                                                     \
        sinpe_##ISA##_store_##SFX(c, vc);                                                 \
        sinpe_##ISA##_store_##SFX(s, vs);                                                 \
        if (c_dup)                                                                        \
            sinpe_##ISA##_store_##SFX(c + c_dup, vc);                                     \
        if (s_dup)                                                                        \
            sinpe_##ISA##_store_##SFX(s + s_dup, vs);                                     \
    }                                                                                     \
    SINPE_ATTR static inline void sinpe_##ISA##_put_dup_##SFX(T *c, T *s, VD vc, VD vs)   \
    {                                                                                     \
        sinpe_##ISA##_dup_##SFX(c, vc);                                                   \
        sinpe_##ISA##_dup_##SFX(s, vs);                                                   \
    }
#define SINPE__COMPOSE_ALL(ISA, VD)                                                          \
    SINPE__COMPOSE(ISA, f64, double, VD)                                                   \
    SINPE__COMPOSE(ISA, f32, float, VD)                                                    \
    SINPE__COMPOSE(ISA, f16, uint16_t, VD)                                                 \
    SINPE__COMPOSE(ISA, bf16, uint16_t, VD)
