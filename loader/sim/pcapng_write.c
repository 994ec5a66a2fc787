// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* pcapng, the few blocks xlb writes (see pcapng_write.h; the format:
 * draft-ietf-opsawg-pcapng). Blocks in the host's byte order, as the
 * section header's magic tells readers. */
#include <errno.h>
#include <string.h>

#include "pcapng_write.h"

#define BT_SHB		0x0A0D0D0AU
#define BT_IDB		0x00000001U
#define BT_EPB		0x00000006U
#define LINKTYPE_ETHERNET 1
#define OPT_END		0
#define OPT_COMMENT	1
#define OPT_TSRESOL	9

static __u32 pad4(__u32 n)
{
	return (n + 3) & ~3U;
}

static int put(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

static int put32(FILE *f, __u32 v)
{
	return put(f, &v, 4);
}

/* An option: code, length, value padded to 4 bytes. */
static int put_opt(FILE *f, __u16 code, const void *val, __u16 len)
{
	static const __u8 zero[4];
	__u16 h[2] = { code, len };

	return put(f, h, 4) ?: put(f, val, len) ?: put(f, zero, pad4(len) - len);
}

int xlb_pcapng_start(FILE *f, __u32 snaplen)
{
	const __u8 tsresol = 9;	/* 10^-9 s */
	/* SHB: magic, version 1.0, section length unknown (-1). */
	const __u32 shb_len = 28;
	const __u32 idb_len = 20 + 8 + 4;
	__u16 ver[2] = { 1, 0 }, link[2] = { LINKTYPE_ETHERNET, 0 };
	__u64 unknown = ~0ULL;

	return put32(f, BT_SHB) ?: put32(f, shb_len) ?: put32(f, 0x1A2B3C4DU) ?:
	       put(f, ver, 4) ?: put(f, &unknown, 8) ?: put32(f, shb_len) ?:
	       put32(f, BT_IDB) ?: put32(f, idb_len) ?: put(f, link, 4) ?:
	       put32(f, snaplen) ?: put_opt(f, OPT_TSRESOL, &tsresol, 1) ?:
	       put_opt(f, OPT_END, NULL, 0) ?: put32(f, idb_len);
}

int xlb_pcapng_frame(FILE *f, __u64 ts_ns, const void *data, __u32 caplen,
		     __u32 len, const char *comment)
{
	static const __u8 zero[4];
	size_t clen = comment ? strlen(comment) : 0;
	__u32 block;

	if (clen > 0xffff - 4)
		clen = 0xffff - 4;
	/* header 28, data, options (comment, end), trailing length 4 */
	block = 28 + pad4(caplen) + (clen ? 4 + pad4(clen) : 0) + 4 + 4;
	return put32(f, BT_EPB) ?: put32(f, block) ?: put32(f, 0) ?:
	       put32(f, ts_ns >> 32) ?: put32(f, (__u32)ts_ns) ?:
	       put32(f, caplen) ?: put32(f, len) ?: put(f, data, caplen) ?:
	       put(f, zero, pad4(caplen) - caplen) ?:
	       (clen ? put_opt(f, OPT_COMMENT, comment, clen) : 0) ?:
	       put_opt(f, OPT_END, NULL, 0) ?: put32(f, block);
}
