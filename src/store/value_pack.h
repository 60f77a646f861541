/* Packed values: how a store keeps session data small without changing it.
 *
 * Session data (messages, events, attributes) is JSON the library writes
 * itself, so most of each value is the library's own vocabulary: key names,
 * event types, roles, statuses. A value is packed as an LZ77 sequence whose
 * matches may point into a fixed dictionary of that vocabulary
 * (value_pack_dict.c) as well as back into the value. Short values gain
 * most, which is why a per-value general-purpose compressor would not do.
 *
 * Format (part of the store file format; never change it in place, add a
 * new tag): byte 0 is DEXA__PACK_TAG_V1, then the unpacked length as a
 * LEB128 varint, then sequences. A sequence is a token byte (high nibble:
 * literal count, low nibble: match length - 4; 15 means more length bytes
 * follow, each added, until one is below 255), the literals, and, unless
 * the value is complete, a 2-byte little-endian distance back from the
 * current position in (dictionary || unpacked bytes so far) and the match
 * length's extra bytes. Tag 0x1E is taken: the PostgreSQL store's rows
 * of several events start with it (pg_internal.h).
 *
 * Pure functions with no I/O; safe from any thread. */
#ifndef DEXA_STORE_VALUE_PACK_H
#define DEXA_STORE_VALUE_PACK_H

#include <stddef.h>

#define DEXA__PACK_TAG_V1 0x01

/* Capacity dexa__value_pack needs for an n-byte value. */
size_t dexa__value_pack_bound(size_t n);

/* Packs v[0..n) into out (dexa__value_pack_bound(n) bytes) and returns the
 * packed length, or 0 when packing would not save at least one byte in 16
 * (the caller stores the value as it is). */
size_t dexa__value_pack(const char *v, size_t n, unsigned char *out);

/* 1 when p[0..n) starts like a packed value (JSON text never does). */
int dexa__value_is_packed(const void *p, size_t n);

/* The unpacked length of a packed value; DEXA_E_CORRUPT if the header is
 * malformed. */
int dexa__value_unpacked_len(const unsigned char *p, size_t n, size_t *len);

/* Room dexa__value_unpack may use past the value's end: it copies short
 * runs as whole blocks, which is what makes it fast. */
#define DEXA__UNPACK_SLACK 32

/* Unpacks p[0..n) into out, a value of len bytes (its
 * dexa__value_unpacked_len) in a buffer of len + DEXA__UNPACK_SLACK bytes;
 * the bytes after out[len) are left undefined. Every read and copy is
 * bounds-checked: malformed input returns DEXA_E_CORRUPT and never reads
 * or writes outside p[0..n) and that buffer. */
int dexa__value_unpack(const unsigned char *p, size_t n, char *out, size_t len);

/* The dictionary of dictionary version 1 (value_pack_dict.c). */
extern const char dexa__pack_dict_v1[];
extern const size_t dexa__pack_dict_v1_len;

#endif
