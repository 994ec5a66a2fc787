// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The writes of a plan, recorded (change.h): each a copy of what it
 * writes, so that the commit needs nothing of the steps that made them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "change.h"

static void *copy_of(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	if (c && n)
		memcpy(c, p, n);
	return c;
}

/* A new op at the end of st's plan, zeroed but for kind, or NULL. */
static struct change_op *op_new(const struct xlb_state *st,
				enum change_op_kind kind)
{
	struct xlb_plan *plan = plan_of(st);
	struct change_op *ops, *op;
	size_t cap;

	if (!plan)
		return NULL;
	if (plan->n_ops == plan->cap_ops) {
		cap = plan->cap_ops ? plan->cap_ops * 2 : 64;
		ops = realloc(plan->ops, cap * sizeof(*ops));
		if (!ops) {
			p_err("out of memory");
			return NULL;
		}
		plan->ops = ops;
		plan->cap_ops = cap;
	}
	op = &plan->ops[plan->n_ops];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->fd = -1;
	return op;
}

static void op_clear(struct change_op *op)
{
	free(op->key);
	free(op->value);
	free(op->ids);
	free(op->note);
}

/* The op made by op_new() is the plan's, or is dropped for want of
 * memory. */
static int op_keep(const struct xlb_state *st, struct change_op *op, bool ok)
{
	if (!ok) {
		op_clear(op);
		p_err("out of memory");
		return -ENOMEM;
	}
	st->change->plan->n_ops++;
	return 0;
}

int xlb_plan_update(const struct xlb_state *st, int fd, const char *map,
		    const void *key, size_t key_size, const void *value,
		    size_t value_size, __u64 flags)
{
	struct change_op *op = op_new(st, OP_UPDATE);

	if (!op)
		return -ENOMEM;
	op->fd = fd;
	op->map = map;
	op->flags = flags;
	op->n = 1;
	op->key = copy_of(key, key_size);
	op->value = copy_of(value, value_size);
	return op_keep(st, op, op->key && op->value);
}

int xlb_plan_update_batch(const struct xlb_state *st, int fd,
			  const char *map, const void *keys, size_t key_size,
			  const void *values, size_t value_size, __u32 n,
			  const __u32 *new_ids, __u32 n_new)
{
	struct change_op *op = op_new(st, OP_UPDATE_BATCH);

	if (!op)
		return -ENOMEM;
	op->fd = fd;
	op->map = map;
	op->n = n;
	op->records = true;
	op->key = copy_of(keys, key_size * n);
	op->value = copy_of(values, value_size * n);
	op->ids = copy_of(new_ids, n_new * sizeof(*new_ids));
	op->n_ids = n_new;
	if (n_new)
		st->change->plan->adds_backends = true;
	return op_keep(st, op, op->key && op->value && op->ids);
}

int xlb_plan_delete(const struct xlb_state *st, int fd, const char *map,
		    const void *key, size_t key_size, bool ok_missing)
{
	struct change_op *op = op_new(st, OP_DELETE);

	if (!op)
		return -ENOMEM;
	op->fd = fd;
	op->map = map;
	op->ok_missing = ok_missing;
	op->key = copy_of(key, key_size);
	return op_keep(st, op, op->key);
}

int xlb_plan_table(const struct xlb_state *st, size_t index)
{
	struct change_op *op = op_new(st, OP_TABLE);

	if (!op)
		return -ENOMEM;
	op->index = index;
	return op_keep(st, op, true);
}

int xlb_plan_hc(const struct xlb_state *st, enum change_op_kind kind,
		__u32 a, __u32 b, __u32 c, const __u32 *ids, __u32 n,
		const void *config, size_t config_size)
{
	struct change_op *op = op_new(st, kind);
	bool ok = true;

	if (!op)
		return -ENOMEM;
	op->a = a;
	op->b = b;
	op->c = c;
	if (ids) {
		op->ids = copy_of(ids, n * sizeof(*ids));
		op->n_ids = n;
		ok = op->ids;
	}
	if (config) {
		op->value = copy_of(config, config_size);
		ok = ok && op->value;
	}
	return op_keep(st, op, ok);
}

int xlb_plan_quiesce(const struct xlb_state *st)
{
	struct change_op *op = op_new(st, OP_QUIESCE);

	return op ? op_keep(st, op, true) : -ENOMEM;
}

int xlb_plan_note(const struct xlb_state *st, const char *fmt, ...)
{
	struct change_op *op = op_new(st, OP_NOTE);
	va_list ap;
	int n;

	if (!op)
		return -ENOMEM;
	va_start(ap, fmt);
	n = vasprintf(&op->note, fmt, ap);
	va_end(ap);
	if (n < 0)
		op->note = NULL;
	return op_keep(st, op, op->note);
}

int xlb_plan_what(const struct xlb_state *st, const char *fmt, ...)
{
	struct xlb_plan *plan = st->change->plan;
	va_list ap;

	if (!plan || !plan->n_ops)
		return 0;
	va_start(ap, fmt);
	vsnprintf(plan->ops[plan->n_ops - 1].what,
		  sizeof(plan->ops[0].what), fmt, ap);
	va_end(ap);
	return 0;
}

void xlb_plan_ops_free(struct xlb_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->n_ops; i++)
		op_clear(&plan->ops[i]);
	free(plan->ops);
	plan->ops = NULL;
	plan->n_ops = plan->cap_ops = 0;
}
