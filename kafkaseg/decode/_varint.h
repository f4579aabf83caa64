/* Zig-zag varints (protobuf style; Kafka's ByteUtils.readVarint/readVarlong), decoded into int64.
 * Forced inline: the kernel calls this several times per record and GCC otherwise keeps it out of line. */
#ifndef KAFKASEG_VARINT_H
#define KAFKASEG_VARINT_H
#include <stdint.h>

/* 0 on success; -1 when the varint runs past `end`; -2 when it is longer than 10 bytes. */
static int kafkaseg_read_varint_slow(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    const uint8_t *p = *pp;
    uint64_t raw = 0;
    int shift = 0;
    for (;;) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        raw |= ((uint64_t)(b & 0x7F)) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
        if (shift > 63) return -2;
    }
    *pp = p;
    *out = (int64_t)((raw >> 1) ^ (0 - (raw & 1)));
    return 0;
}

static inline __attribute__((always_inline)) int
kafkaseg_read_varint(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    const uint8_t *p = *pp;
    if (end - p >= 2) {
        uint64_t raw;
        if (p[0] < 0x80) {
            raw = p[0];
            *pp = p + 1;
            *out = (int64_t)((raw >> 1) ^ (0 - (raw & 1)));
            return 0;
        }
        if (p[1] < 0x80) {
            raw = (uint64_t)(p[0] & 0x7F) | ((uint64_t)p[1] << 7);
            *pp = p + 2;
            *out = (int64_t)((raw >> 1) ^ (0 - (raw & 1)));
            return 0;
        }
    }
    return kafkaseg_read_varint_slow(pp, end, out);
}
#endif
