// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Health settings and state in the instance's maps (see hc_store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "numbers.h"
#include "report.h"
#include "hc_store.h"
#include "change.h"
#include "update.h"

bool xlb_hc_present(const struct xlb_instance *inst)
{
	return inst->hc_config_fd >= 0 && inst->hc_state_fd >= 0;
}

/* One of the two maps as bpf/maps.h declares it, pinned by name, or the
 * one pinned meanwhile. */
static int make_map(struct xlb_instance *inst, const char *name,
		    __u32 value_size, __u32 entries, int *fd_out)
{
	char path[PATH_MAX + 32];
	int fd, err;

	if (*fd_out >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", inst->dir, name);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(__u32),
			    value_size, entries, NULL);
	if (fd < 0) {
		err = -errno;
		p_err("cannot create %s: %s", path, strerror(-err));
		return err;
	}
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		close(fd);
		/* `ip link ... xdp obj` pinned it since the instance was
		 * opened (it takes no xlb lock): that one is the instance's. */
		if (err == -EEXIST) {
			fd = bpf_obj_get(path);
			err = fd < 0 ? -errno : 0;
		}
		if (err) {
			p_err("cannot pin %s: %s", path, strerror(-err));
			return err;
		}
	}
	*fd_out = fd;
	return 0;
}

/* An instance made by an xlb older than health checks gets the maps with
 * its first setting: the datapath does not read them, so nothing needs
 * attaching again, and the next `xlb attach` reuses them by name. */
static int ensure_maps(struct xlb_instance *inst)
{
	return make_map(inst, XLB_MAP_HC_CONFIG, sizeof(struct xlb_hc_config),
			XLB_HC_CONFIG_ENTRIES, &inst->hc_config_fd) ?:
	       make_map(inst, XLB_MAP_HC_STATE, sizeof(struct xlb_hc_state),
			XLB_MAX_BACKENDS, &inst->hc_state_fd);
}

static int config_read(const struct xlb_instance *inst, __u32 key,
		       struct xlb_hc_config *c)
{
	memset(c, 0, sizeof(*c));
	if (inst->hc_config_fd < 0)
		return 0;
	if (bpf_map_lookup_elem(inst->hc_config_fd, &key, c)) {
		p_err("cannot read %s/%s: %s", inst->dir, XLB_MAP_HC_CONFIG,
		      strerror(errno));
		return -errno;
	}
	return 0;
}

int xlb_hc_vip_read(const struct xlb_instance *inst, __u32 vip_id,
		    struct xlb_hc_config *c)
{
	return config_read(inst, xlb_hc_vip_key(vip_id), c);
}

int xlb_hc_backend_read(const struct xlb_instance *inst, __u32 backend_id,
			struct xlb_hc_config *c)
{
	return config_read(inst, xlb_hc_backend_key(backend_id), c);
}

/*
 * st NULL: the commit of a plan, which has written what the command owed
 * already. In a plan, the write is recorded whatever the map holds now,
 * since the plan's writes before it may change that (a record's settings
 * reset, another's copied): its commit compares again and writes only
 * what differs.
 */
static int config_write(struct xlb_instance *inst, struct xlb_state *st,
			__u32 key, const struct xlb_hc_config *c,
			enum change_op_kind kind, __u32 id)
{
	static const struct xlb_hc_config none;
	struct xlb_hc_config have;
	int err;

	err = config_read(inst, key, &have);
	if (err)
		return err;
	if (st && st->planning)
		return (memcmp(&have, c, sizeof(have)) ?
			xlb_update_pending(inst, st) : 0) ?:
		       xlb_plan_hc(st, kind, id, 0, 0, NULL, 0, c, sizeof(*c));
	if (!memcmp(&have, c, sizeof(have)))
		return 0;
	if (!memcmp(c, &none, sizeof(none)) && inst->hc_config_fd < 0)
		return 0;
	err = (st ? xlb_update_pending(inst, st) : 0) ?: ensure_maps(inst);
	if (err)
		return err;
	err = xlb_map_update(inst->hc_config_fd, &key, c, 0);
	if (err)
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_HC_CONFIG,
		      strerror(-err));
	return err;
}

int xlb_hc_vip_write(struct xlb_instance *inst, struct xlb_state *st,
		     __u32 vip_id, const struct xlb_hc_config *c)
{
	return config_write(inst, st, xlb_hc_vip_key(vip_id), c,
			    OP_HC_VIP_CONFIG, vip_id);
}

int xlb_hc_backend_write(struct xlb_instance *inst, struct xlb_state *st,
			 __u32 backend_id, const struct xlb_hc_config *c)
{
	return config_write(inst, st, xlb_hc_backend_key(backend_id), c,
			    OP_HC_BACKEND_CONFIG, backend_id);
}

void xlb_hc_merge(const struct xlb_hc_config *vip,
		  const struct xlb_hc_config *backend, __u16 vip_port,
		  struct xlb_hc_config *out)
{
	const struct xlb_hc_config *b = backend;

	*out = *vip;
	if (b) {
#define OVER(f) do { if (b->f) out->f = b->f; } while (0)
		OVER(kind);
		OVER(on_down);
		OVER(rise);
		OVER(fall);
		OVER(interval_ms);
		OVER(timeout_ms);
		OVER(port);
		OVER(http_status);
#undef OVER
		if (b->path[0])
			memcpy(out->path, b->path, sizeof(out->path));
		if (b->send_len) {
			out->send_len = b->send_len;
			memcpy(out->send, b->send, sizeof(out->send));
		}
		if (b->expect_len) {
			out->expect_len = b->expect_len;
			memcpy(out->expect, b->expect, sizeof(out->expect));
		}
	}
	if (out->kind == XLB_HC_INHERIT)
		out->kind = XLB_HC_NONE;
	if (out->on_down == XLB_HC_ON_DOWN_INHERIT)
		out->on_down = XLB_HC_ON_DOWN_KEEP;
	if (!out->rise)
		out->rise = XLB_HC_DEFAULT_RISE;
	if (!out->fall)
		out->fall = XLB_HC_DEFAULT_FALL;
	if (!out->interval_ms)
		out->interval_ms = XLB_HC_DEFAULT_INTERVAL_MS;
	/* A short interval set alone still leaves a timeout below it. */
	if (!out->timeout_ms)
		out->timeout_ms = out->interval_ms / 2 < XLB_HC_DEFAULT_TIMEOUT_MS ?
				  out->interval_ms / 2 : XLB_HC_DEFAULT_TIMEOUT_MS;
	if (!out->port)
		out->port = vip_port;
	if (!out->http_status)
		out->http_status = XLB_HC_DEFAULT_HTTP_STATUS;
	if (!out->path[0])
		strcpy(out->path, XLB_HC_DEFAULT_PATH);
}

int xlb_hc_effective(const struct xlb_instance *inst,
		     const struct xlb_state *st, __u32 backend_id,
		     struct xlb_hc_config *out)
{
	struct xlb_hc_config vip, be;
	const struct xlb_state_vip *v;
	const struct xlb_backend *b;
	int err;

	if (backend_id == XLB_BACKEND_NONE || backend_id >= XLB_MAX_BACKENDS)
		return -ENOENT;
	b = &st->backends[backend_id];
	v = xlb_backend_live(b) ?
	    xlb_state_vip_by_id((struct xlb_state *)st, b->vip_id) : NULL;
	if (!v || v->corrupt[0])
		return -ENOENT;
	err = xlb_hc_vip_read(inst, v->vip.id, &vip) ?:
	      xlb_hc_backend_read(inst, backend_id, &be);
	if (err)
		return err;
	xlb_hc_merge(&vip, &be, ntohs(v->key.port), out);
	return 0;
}

int xlb_hc_state_read(const struct xlb_instance *inst, __u32 backend_id,
		      __u32 gen, struct xlb_hc_state *s)
{
	memset(s, 0, sizeof(*s));
	if (inst->hc_state_fd >= 0 &&
	    bpf_map_lookup_elem(inst->hc_state_fd, &backend_id, s)) {
		p_err("cannot read %s/%s: %s", inst->dir, XLB_MAP_HC_STATE,
		      strerror(errno));
		return -errno;
	}
	if (s->gen != gen) {
		memset(s, 0, sizeof(*s));
		s->gen = gen;
	}
	return 0;
}

int xlb_hc_state_write(struct xlb_instance *inst, __u32 backend_id,
		       const struct xlb_hc_state *s)
{
	int err = ensure_maps(inst);

	if (err)
		return err;
	err = xlb_map_update(inst->hc_state_fd, &backend_id, s, 0);
	if (err)
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_HC_STATE,
		      strerror(-err));
	return err;
}

int xlb_hc_reset_vip(struct xlb_instance *inst, __u32 vip_id)
{
	static const struct xlb_hc_config none;

	return config_write(inst, NULL, xlb_hc_vip_key(vip_id), &none,
			    OP_HC_VIP_CONFIG, vip_id);
}

/* n zeroed values of size, written in one batch at keys. */
static int zero_batch(struct xlb_instance *inst, int fd, const char *name,
		      const __u32 *keys, __u32 n, size_t size)
{
	void *zeros;
	int err;

	zeros = calloc(n, size);
	if (!zeros) {
		p_err("out of memory");
		return -ENOMEM;
	}
	err = xlb_map_update_batch(fd, keys, zeros, n);
	if (err)
		p_err("cannot reset %u records in %s/%s: %s", n, inst->dir,
		      name, strerror(-err));
	free(zeros);
	return err;
}

int xlb_hc_reset_backends(struct xlb_instance *inst, const __u32 *ids,
			  __u32 n)
{
	__u32 *keys;
	__u32 i;
	int err;

	if (!n || !xlb_hc_present(inst))
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys) {
		p_err("out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		keys[i] = xlb_hc_backend_key(ids[i]);
	err = zero_batch(inst, inst->hc_config_fd, XLB_MAP_HC_CONFIG, keys, n,
			 sizeof(struct xlb_hc_config)) ?:
	      zero_batch(inst, inst->hc_state_fd, XLB_MAP_HC_STATE, ids, n,
			 sizeof(struct xlb_hc_state));
	free(keys);
	return err;
}

int xlb_hc_copy_vip(struct xlb_instance *inst, __u32 from, __u32 to)
{
	struct xlb_hc_config c;

	return xlb_hc_vip_read(inst, from, &c) ?:
	       config_write(inst, NULL, xlb_hc_vip_key(to), &c,
			    OP_HC_VIP_CONFIG, to);
}

int xlb_hc_copy_backend(struct xlb_instance *inst, __u32 from, __u32 to,
			__u32 new_gen)
{
	struct xlb_hc_config c;
	struct xlb_hc_state s;
	int err;

	if (!xlb_hc_present(inst))
		return 0;
	err = xlb_hc_backend_read(inst, from, &c) ?:
	      config_write(inst, NULL, xlb_hc_backend_key(to), &c,
			   OP_HC_BACKEND_CONFIG, to);
	if (err)
		return err;
	if (bpf_map_lookup_elem(inst->hc_state_fd, &from, &s)) {
		p_err("cannot read %s/%s: %s", inst->dir, XLB_MAP_HC_STATE,
		      strerror(errno));
		return -errno;
	}
	s.gen = new_gen;
	return xlb_hc_state_write(inst, to, &s);
}

const char *xlb_hc_kind_name(__u8 kind)
{
	static const char *const names[] = {
		[XLB_HC_INHERIT] = "inherit", [XLB_HC_NONE] = "none",
		[XLB_HC_TCP] = "tcp", [XLB_HC_HTTP] = "http",
		[XLB_HC_UDP] = "udp",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char *xlb_hc_on_down_name(__u8 on_down)
{
	static const char *const names[] = {
		[XLB_HC_ON_DOWN_INHERIT] = "inherit",
		[XLB_HC_ON_DOWN_KEEP] = "keep",
		[XLB_HC_ON_DOWN_RESET] = "reset",
	};

	return on_down < sizeof(names) / sizeof(names[0]) ? names[on_down] : "?";
}

const char *xlb_hc_health_name(__u8 health)
{
	static const char *const names[] = {
		[XLB_HC_UNKNOWN] = "unknown", [XLB_HC_UP] = "up",
		[XLB_HC_DOWN] = "down",
	};

	return health < sizeof(names) / sizeof(names[0]) ? names[health] : "?";
}

static __thread char why_buf[128];

static bool text_ok(const __u8 *p, size_t n, bool path)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] > 0x20 && p[i] < 0x7f)
			continue;
		if (!path && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' ||
			      p[i] == '\n'))
			continue;
		return false;
	}
	return true;
}

/* The fields of one record, on their own. */
static int fields_check(const struct xlb_hc_config *c, const char **why)
{
	size_t path_len = strnlen(c->path, sizeof(c->path));

	if (c->kind > XLB_HC_UDP)
		*why = "unknown health check kind";
	else if (c->on_down > XLB_HC_ON_DOWN_RESET)
		*why = "unknown on-down";
	else if (c->rise > XLB_HC_MAX_COUNT || c->fall > XLB_HC_MAX_COUNT)
		*why = "rise and fall are at most 100";
	else if (c->interval_ms && (c->interval_ms < XLB_HC_MIN_INTERVAL_MS ||
				    c->interval_ms > XLB_HC_MAX_INTERVAL_MS))
		*why = "interval out of range 10ms..3600s";
	else if (c->timeout_ms && (c->timeout_ms < XLB_HC_MIN_INTERVAL_MS / 2 ||
				   c->timeout_ms > XLB_HC_MAX_INTERVAL_MS))
		*why = "timeout out of range 5ms..3600s";
	else if (c->http_status && (c->http_status < 100 || c->http_status > 599))
		*why = "HTTP status out of range 100..599";
	else if (path_len == sizeof(c->path))
		*why = "HTTP path longer than 63 bytes";
	else if (path_len && c->path[0] != '/')
		*why = "HTTP path must begin with '/'";
	else if (!text_ok((const __u8 *)c->path, path_len, true))
		*why = "HTTP path holds a space or a control character";
	else if (c->send_len > XLB_HC_DATA_MAX || c->expect_len > XLB_HC_DATA_MAX)
		*why = "UDP data longer than 64 bytes";
	else if (!text_ok(c->send, c->send_len, false) ||
		 !text_ok(c->expect, c->expect_len, false))
		*why = "UDP data must be printable ASCII, tab, CR or LF";
	else
		return 0;
	return -EINVAL;
}

int xlb_hc_port_check(const struct xlb_hc_config *vip,
		      const struct xlb_hc_config *c, __be16 vip_port,
		      const char **why)
{
	struct xlb_hc_config eff;

	if (vip)
		xlb_hc_merge(vip, c, ntohs(vip_port), &eff);
	else
		xlb_hc_merge(c, NULL, ntohs(vip_port), &eff);
	if (eff.kind > XLB_HC_NONE && !eff.port) {
		*why = "its health checks need --health-port: the VIP has no port of its own";
		return -EINVAL;
	}
	return 0;
}

int xlb_hc_check(const struct xlb_hc_config *vip,
		 const struct xlb_hc_config *c, const char **why)
{
	char t[16], i[16];
	struct xlb_hc_config eff;

	if (fields_check(c, why))
		return -EINVAL;
	if (vip)
		xlb_hc_merge(vip, c, 0, &eff);
	else
		xlb_hc_merge(c, NULL, 0, &eff);
	if (eff.timeout_ms >= eff.interval_ms) {
		snprintf(why_buf, sizeof(why_buf),
			 "timeout %s is not below interval %s",
			 xlb_duration_str(eff.timeout_ms, t, sizeof(t)),
			 xlb_duration_str(eff.interval_ms, i, sizeof(i)));
		*why = why_buf;
		return -EINVAL;
	}
	return 0;
}
