// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Reading an instance's state from its maps; ids; the table it asks for. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "addr.h"
#include "report.h"
#include "flow_hash.h"
#include "gue.h"
#include "lb_algo.h"
#include "state.h"
#include "vip_mode.h"

static int vip_key_cmp(const void *a, const void *b)
{
	const struct xlb_state_vip *x = a, *y = b;

	if (x->key.family != y->key.family)
		return x->key.family - y->key.family;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

static int read_vips(const struct xlb_instance *inst, struct xlb_state *st)
{
	struct xlb_vip_key key, next;
	void *prev = NULL;

	st->n_vips = 0;
	while (!bpf_map_get_next_key(inst->vips_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (st->n_vips == XLB_MAX_VIPS)
			break;
		/* A VIP deleted between the two calls cannot happen under
		 * our lock; any other failure is real. */
		if (bpf_map_lookup_elem(inst->vips_fd, &key,
					&st->vips[st->n_vips].vip))
			return -errno;
		st->vips[st->n_vips++].key = key;
	}
	if (errno != ENOENT)
		return -errno;
	qsort(st->vips, st->n_vips, sizeof(st->vips[0]), vip_key_cmp);
	return 0;
}

/* Check what was read: an id in range and of this VIP alone, a table size
 * the loader could have made, known flags, a key it could have written. */
static void validate_vips(struct xlb_state *st)
{
	struct xlb_state_vip *v, *w;
	const char *why;
	__u32 i, j;

	for (i = 0; i < st->n_vips; i++) {
		v = &st->vips[i];
		if ((v->key.family != XLB_AF_INET && v->key.family != XLB_AF_INET6) ||
		    ((v->key.proto & ~XLB_VIP_PROTO_ALL_PORTS) != IPPROTO_TCP &&
		     (v->key.proto & ~XLB_VIP_PROTO_ALL_PORTS) != IPPROTO_UDP) ||
		    (v->key.proto & XLB_VIP_PROTO_ALL_PORTS && v->key.port))
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "family %u, protocol %u", v->key.family,
				 v->key.proto);
		else if (v->vip.id >= XLB_MAX_VIPS)
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "id %u out of range 0..%u", v->vip.id,
				 XLB_MAX_VIPS - 1);
		else if (xlb_table_size_check(v->vip.table_size, &why))
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "table size %u: %s", v->vip.table_size, why);
		else if (v->vip.flags & ~(XLB_VIP_F_DIRTY | XLB_VIP_F_MODE |
					  XLB_VIP_F_SRC))
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "unknown flags 0x%x", v->vip.flags);
		else if ((v->vip.flags & XLB_VIP_F_SRC) &&
			 !(v->vip.flags & XLB_VIP_F_SRC_LIST))
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "flags 0x%x: source ranges without a list",
				 v->vip.flags);
		else if (xlb_vip_mode_check(v->vip.flags & XLB_VIP_F_MODE,
					    v->key.family, &why))
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "flags 0x%x: %s", v->vip.flags, why);
		for (j = 0; j < i; j++) {
			w = &st->vips[j];
			if (w->vip.id != v->vip.id)
				continue;
			snprintf(v->corrupt, sizeof(v->corrupt),
				 "id %u held by another VIP too", v->vip.id);
			snprintf(w->corrupt, sizeof(w->corrupt),
				 "id %u held by another VIP too", w->vip.id);
		}
	}
}

void xlb_state_vip_corrupt_note(const struct xlb_state_vip *v)
{
	char name[XLB_VIP_STRLEN];

	xlb_vip_str(&v->key, name, sizeof(name));
	p_info("xlb: VIP %s is corrupt (%s) and left alone: `xlb vip del %s` removes it, `xlb apply` of a file that lists it makes it anew",
	       name, v->corrupt, name);
}

static int read_backends(const struct xlb_instance *inst,
			 struct xlb_state *st)
{
	__u32 keys[XLB_MAX_BACKENDS];
	__u32 count = XLB_MAX_BACKENDS, out, i;
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);

	/* One syscall for the whole array where the kernel has batches. */
	if (!bpf_map_lookup_batch(inst->backends_fd, NULL, &out, keys,
				  st->backends, &count, &opts) ||
	    (errno == ENOENT && count == XLB_MAX_BACKENDS)) {
		for (i = 0; i < count; i++)
			if (keys[i] != i)
				break;
		if (i == XLB_MAX_BACKENDS)
			return 0;
	}
	for (i = 0; i < XLB_MAX_BACKENDS; i++)
		if (bpf_map_lookup_elem(inst->backends_fd, &i, &st->backends[i]))
			return -errno;
	return 0;
}

int xlb_state_read(const struct xlb_instance *inst, struct xlb_state **out)
{
	struct xlb_state *st;
	__u32 zero = 0;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st) {
		p_err("out of memory");
		return -ENOMEM;
	}
	if (bpf_map_lookup_elem(inst->config_fd, &zero, &st->config)) {
		err = -errno;
		p_err("cannot read %s/%s: %s", inst->dir, XLB_MAP_CONFIG,
		      strerror(errno));
		goto fail;
	}
	err = read_vips(inst, st);
	if (err) {
		p_err("cannot read %s/%s: %s", inst->dir, XLB_MAP_VIPS,
		      strerror(-err));
		goto fail;
	}
	validate_vips(st);
	err = read_backends(inst, st);
	if (err) {
		p_err("cannot read %s/%s: %s", inst->dir, XLB_MAP_BACKENDS,
		      strerror(-err));
		goto fail;
	}
	*out = st;
	return 0;
fail:
	free(st);
	return err;
}

int xlb_state_open(struct xlb_instance *inst,
		   const struct xlb_instance_opts *opts, struct xlb_state **out)
{
	int err;

	err = xlb_instance_open(inst, opts, XLB_LOCK_READ);
	if (err)
		return err;
	err = xlb_state_read(inst, out);
	if (err)
		xlb_instance_close(inst);
	return err;
}

/* A change holds nothing of its own outside its calls (update.c). */
void xlb_state_free(struct xlb_state *st)
{
	if (st)
		free(st->change);
	free(st);
}

struct xlb_state_vip *xlb_state_vip_find(struct xlb_state *st,
					 const struct xlb_vip_key *key)
{
	__u32 i;

	for (i = 0; i < st->n_vips; i++)
		if (!memcmp(&st->vips[i].key, key, sizeof(*key)))
			return &st->vips[i];
	return NULL;
}

int xlb_state_vip_insert(struct xlb_state *st, const struct xlb_state_vip *v)
{
	if (st->n_vips == XLB_MAX_VIPS)
		return -ENOSPC;
	st->vips[st->n_vips++] = *v;
	qsort(st->vips, st->n_vips, sizeof(st->vips[0]), vip_key_cmp);
	return 0;
}

void xlb_state_vip_erase(struct xlb_state *st, const struct xlb_vip_key *key)
{
	struct xlb_state_vip *v = xlb_state_vip_find(st, key);

	if (!v)
		return;
	memmove(v, v + 1, (st->vips + st->n_vips - (v + 1)) * sizeof(*v));
	st->n_vips--;
}

struct xlb_state_vip *xlb_state_vip_by_id(struct xlb_state *st, __u32 id)
{
	__u32 i;

	for (i = 0; i < st->n_vips; i++)
		if (st->vips[i].vip.id == id)
			return &st->vips[i];
	return NULL;
}

static int backend_addr_cmp(const struct xlb_backend *recs, __u32 a, __u32 b)
{
	const struct xlb_backend *x = &recs[a], *y = &recs[b];

	if (x->family != y->family)
		return x->family - y->family;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/* Sift ids[i] down the heap of ids[0..n). */
static void sift_down(const struct xlb_backend *recs, __u32 *ids, size_t i,
		      size_t n)
{
	size_t c;
	__u32 t;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && backend_addr_cmp(recs, ids[c], ids[c + 1]) < 0)
			c++;
		if (backend_addr_cmp(recs, ids[i], ids[c]) >= 0)
			return;
		t = ids[i];
		ids[i] = ids[c];
		ids[c] = t;
	}
}

/* Record ids in the order of their addresses: a heapsort, since qsort
 * passes its comparison no context but through a global. */
static void sort_by_addr(const struct xlb_backend *recs, __u32 *ids, size_t n)
{
	size_t i;
	__u32 t;

	for (i = n / 2; i-- > 0;)
		sift_down(recs, ids, i, n);
	for (i = n; i-- > 1;) {
		t = ids[0];
		ids[0] = ids[i];
		ids[i] = t;
		sift_down(recs, ids, 0, i);
	}
}

size_t xlb_state_vip_backends(const struct xlb_state *st, __u32 vip_id,
			      __u32 ids[XLB_MAX_BACKENDS])
{
	size_t n = 0;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++)
		if (xlb_backend_live(&st->backends[i]) &&
		    st->backends[i].vip_id == vip_id)
			ids[n++] = i;
	sort_by_addr(st->backends, ids, n);
	return n;
}

__u32 xlb_state_backend_find(const struct xlb_state *st, __u32 vip_id,
			     const __be32 addr[4], __u8 family)
{
	const struct xlb_backend *b;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		if (xlb_backend_live(b) && b->vip_id == vip_id &&
		    b->family == family && !memcmp(b->addr, addr, 16))
			return i;
	}
	return 0;
}

size_t xlb_state_backends_in_use(const struct xlb_state *st)
{
	size_t n = 0;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++)
		n += !!(st->backends[i].flags & XLB_BE_F_IN_USE);
	return n;
}

int xlb_state_alloc_vip_id(const struct xlb_state *st)
{
	bool used[XLB_MAX_VIPS] = {};
	__u32 i;

	for (i = 0; i < st->n_vips; i++)
		if (st->vips[i].vip.id < XLB_MAX_VIPS)
			used[st->vips[i].vip.id] = true;
	for (i = 0; i < XLB_MAX_VIPS; i++)
		if (!used[i])
			return i;
	return -ENOSPC;
}

int xlb_state_alloc_backend_id(const struct xlb_state *st)
{
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++)
		if (!(st->backends[i].flags & XLB_BE_F_IN_USE))
			return i;
	return -ENOSPC;
}

bool xlb_state_vip_fail_open(const struct xlb_state *st, __u32 vip_id)
{
	const struct xlb_backend *b;
	size_t weighted = 0, down = 0;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		if (!xlb_backend_live(b) || b->vip_id != vip_id || !b->weight)
			continue;
		weighted++;
		down += !!(b->flags & XLB_BE_F_DOWN);
	}
	return weighted && down == weighted;
}

int xlb_state_table_build(const struct xlb_state *st, __u32 vip_id, __u32 m,
			  __u32 *slots)
{
	__u32 ids[XLB_MAX_BACKENDS];
	bool fail_open = xlb_state_vip_fail_open(st, vip_id);
	struct lb_backend *in;
	size_t n, k = 0, i;
	__u32 s;
	int err;

	n = xlb_state_vip_backends(st, vip_id, ids);
	in = calloc(n ? n : 1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct xlb_backend *b = &st->backends[ids[i]];

		/* Down weighs nothing, as a drain, but keeps its weight. */
		if (!b->weight || (b->flags & XLB_BE_F_DOWN && !fail_open))
			continue;
		xlb_addr_str(b->addr, b->family, in[k].id, sizeof(in[k].id));
		in[k].weight = b->weight;
		ids[k++] = ids[i];
	}
	if (!k) {
		memset(slots, 0, (size_t)m * sizeof(*slots));
		free(in);
		return 0;
	}
	err = maglev_build(in, k, m, slots);
	free(in);
	if (err)
		return err;
	/* Maglev names positions in its input; the datapath wants ids. */
	for (s = 0; s < m; s++)
		slots[s] = ids[slots[s]];
	return 0;
}

static __u64 text_hash(const char *text)
{
	static const __u64 key[2] = { 0x786c622d66707269ULL, 0x6e742d7461626c65ULL };
	__u8 buf[XLB_NAME_MAX] = {};
	size_t len = strnlen(text, sizeof(buf) - 1), i;
	struct xlb_sip s;

	memcpy(buf, text, len);
	xlb_sip_init(&s, key[0], key[1]);
	for (i = 0; i < len; i += 8)
		xlb_sip_word(&s, xlb_le64(buf + i), 2);
	return xlb_sip_final(&s, (len + 7) / 8 * 8, 2, 4);
}

__u64 xlb_state_fingerprint(const struct xlb_state *st,
			    const struct xlb_state_vip *v, const __u32 *slots)
{
	__u64 addr_hash[XLB_MAX_BACKENDS];
	char text[XLB_VIP_STRLEN];
	__u64 none = text_hash("-");
	const struct xlb_backend *b;
	struct xlb_sip s;
	__u32 i, id, words;

	for (i = 0; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		addr_hash[i] = none;
		if (i != XLB_BACKEND_NONE && xlb_backend_live(b) &&
		    b->vip_id == v->vip.id)
			addr_hash[i] = text_hash(xlb_addr_str(b->addr,
					b->family, text, sizeof(text)));
	}
	xlb_sip_init(&s, 0, 0);
	xlb_sip_word(&s, text_hash(xlb_vip_str(&v->key, text, sizeof(text))), 1);
	xlb_sip_word(&s, v->vip.table_size, 1);
	xlb_sip_word(&s, st->config.hash_key[0], 1);
	xlb_sip_word(&s, st->config.hash_key[1], 1);
	words = 4;
	/* GUE, stateless or affinity sends other packets: in the
	 * fingerprint, GUE with the port it goes to (a tracked IPIP VIP of
	 * the 5-tuple keeps the fingerprint it had). */
	if (v->vip.flags & XLB_VIP_F_FLOWS) {
		xlb_sip_word(&s, v->vip.flags & XLB_VIP_F_FLOWS, 1);
		words++;
	}
	if (v->vip.flags & XLB_VIP_F_GUE) {
		xlb_sip_word(&s, st->config.gue_port ? ntohs(st->config.gue_port)
						     : XLB_GUE_DEFAULT_PORT, 1);
		words++;
	}
	for (i = 0; i < v->vip.table_size; i++) {
		id = slots[i];
		xlb_sip_word(&s, id < XLB_MAX_BACKENDS ? addr_hash[id] : none, 1);
	}
	return xlb_sip_final(&s, 8 * (words + (__u64)v->vip.table_size), 1, 3);
}
