// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Strict JSON checking (see json_strict.h): a recursive descent over the
 * text, nested no deeper than the limit, that allocates only the set of
 * keys read so far (to find a key twice in an object, compared as the
 * strings they denote: "a" and "\u0061" are the same key).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"

#define DEPTH_CAP	64	/* frames[]: any max_depth is cut to this */
#define PATH_KEY_MAX	64	/* bytes of a key shown in a path */

/* An array or object being read. */
struct frame {
	bool array;
	bool in_item;		/* reading an element or the value of key */
	size_t index;		/* array: elements before the current one */
	size_t key, key_len;	/* object: the current key, inside its quotes */
	const struct json_strict_count *count;	/* array: its limit or NULL */
	uint64_t id;		/* object: which one, in the key set */
};

/* A key read: in which object, and where its text is. */
struct seen_key {
	uint64_t obj;		/* 0: an empty slot */
	uint64_t hash;
	size_t off, len;
};

struct checker {
	const char *s;
	size_t len, pos;
	const struct json_strict_limits *lim;
	unsigned int max_depth, depth;
	size_t values;
	struct frame frames[DEPTH_CAP];
	uint64_t objects;
	struct seen_key *keys;	/* open addressing, cap a power of 2 */
	size_t n_keys, keys_cap;
	char *msg;
	size_t msg_size;
};

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_hex(char ch)
{
	return is_digit(ch) || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
}

static unsigned int hex4(const char *p)
{
	unsigned int v = 0, i;

	for (i = 0; i < 4; i++)
		v = v << 4 | (is_digit(p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
	return v;
}

/* The next code point of a string's text from *i; the text was checked. */
static uint32_t next_cp(const char *text, size_t *i)
{
	const unsigned char *p = (const unsigned char *)text + *i;
	uint32_t cp, lo;

	if (p[0] == '\\') {
		*i += 2;
		switch (p[1]) {
		case 'b':
			return '\b';
		case 'f':
			return '\f';
		case 'n':
			return '\n';
		case 'r':
			return '\r';
		case 't':
			return '\t';
		case 'u':
			cp = hex4((const char *)p + 2);
			*i += 4;
			if (cp >= 0xd800 && cp < 0xdc00) {
				lo = hex4((const char *)p + 8);
				*i += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			return cp;
		default:	/* \" \\ \/ */
			return p[1];
		}
	}
	if (p[0] < 0x80) {
		*i += 1;
		return p[0];
	}
	if (p[0] < 0xe0) {
		*i += 2;
		return (p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	}
	if (p[0] < 0xf0) {
		*i += 3;
		return (p[0] & 0x0f) << 12 | (p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	}
	*i += 4;
	return (p[0] & 0x07) << 18 | (p[1] & 0x3f) << 12 | (p[2] & 0x3f) << 6 |
	       (p[3] & 0x3f);
}

/* The length of the valid UTF-8 sequence at p (not ASCII), or 0: no
 * overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		lo = p[0] == 0xe0 ? 0xa0 : lo;
		hi = p[0] == 0xed ? 0x9f : hi;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		lo = p[0] == 0xf0 ? 0x90 : lo;
		hi = p[0] == 0xf4 ? 0x8f : hi;
	} else {
		return 0;
	}
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Line and column (in characters, from 1) of offset off. */
static void line_col(const struct checker *c, size_t off, size_t *line,
		     size_t *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off && i < c->len; i++) {
		if (c->s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)c->s[i] & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

/* The path of what frames[0..n) are reading: "vips[3].backends". */
static const char *path(const struct checker *c, unsigned int n, char *buf,
			size_t size)
{
	const struct frame *f;
	size_t used = 0;
	unsigned int i;
	int len;

	buf[0] = '\0';
	for (i = 0; i < n && used < size; i++) {
		f = &c->frames[i];
		if (!f->in_item)
			break;
		if (f->array)
			len = snprintf(buf + used, size - used, "[%zu]", f->index);
		else
			len = snprintf(buf + used, size - used, "%s%.*s",
				       i ? "." : "",
				       (int)(f->key_len < PATH_KEY_MAX ?
					     f->key_len : PATH_KEY_MAX),
				       c->s + f->key);
		used += len > 0 ? (size_t)len : 0;
	}
	return buf;
}

static int syntax(struct checker *c, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int syntax(struct checker *c, size_t off, const char *fmt, ...)
{
	char what[160], at[256];
	size_t line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	line_col(c, off, &line, &col);
	path(c, c->depth, at, sizeof(at));
	snprintf(c->msg, c->msg_size, "syntax error at line %zu, column %zu%s%s: %s",
		 line, col, *at ? ", in " : "", at, what);
	return -EINVAL;
}

/* What is at pos, for an error. */
static const char *found(const struct checker *c, char *buf, size_t size)
{
	unsigned char ch;

	if (c->pos >= c->len)
		return "the end of the text";
	ch = c->s[c->pos];
	if (ch > ' ' && ch < 0x7f)
		snprintf(buf, size, "'%c'", ch);
	else
		snprintf(buf, size, "byte 0x%02x", ch);
	return buf;
}

static bool at_word(const struct checker *c, const char *word)
{
	size_t n = strlen(word);

	return c->len - c->pos >= n && !memcmp(c->s + c->pos, word, n);
}

static void skip_ws(struct checker *c)
{
	while (c->pos < c->len && (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' ||
				   c->s[c->pos] == '\n' || c->s[c->pos] == '\r'))
		c->pos++;
}

static int eof(struct checker *c)
{
	return syntax(c, c->len, "unexpected end of input");
}

/* The usual things a lenient parser takes that RFC 8259 does not. */
static int not_json(struct checker *c, const char *expected)
{
	char f[16];

	if (c->pos >= c->len)
		return eof(c);
	if (c->s[c->pos] == '/')
		return syntax(c, c->pos, "comments are not JSON");
	if (c->s[c->pos] == '\'')
		return syntax(c, c->pos, "single quotes are not JSON: strings are in double quotes");
	if (at_word(c, "NaN") || at_word(c, "Infinity") || at_word(c, "-Infinity"))
		return syntax(c, c->pos, "NaN and Infinity are not JSON");
	if (at_word(c, "\xef\xbb\xbf"))
		return syntax(c, c->pos, "a byte order mark is not JSON");
	return syntax(c, c->pos, "expected %s, found %s", expected,
		      found(c, f, sizeof(f)));
}

static int too_many(struct checker *c, const struct frame *f)
{
	const struct json_strict_count *n = f->count;
	char at[256];
	size_t line, col;

	line_col(c, c->pos, &line, &col);
	path(c, c->depth - 1, at, sizeof(at));
	snprintf(c->msg, c->msg_size,
		 "%s%sat least %zu %s: the limit is %zu%s (line %zu, column %zu)",
		 at, *at ? ": " : "", n->max + 1, n->what, n->max, n->scope,
		 line, col);
	return -E2BIG;
}

static int too_many_values(struct checker *c)
{
	size_t line, col;

	line_col(c, c->pos, &line, &col);
	snprintf(c->msg, c->msg_size, "more than %zu values%s (line %zu, column %zu)",
		 c->lim->max_values, c->lim->values_why ? c->lim->values_why : "",
		 line, col);
	return -E2BIG;
}

/* Whether key (its text at off, len) is name (ASCII, n bytes). */
static bool key_is(const struct checker *c, size_t off, size_t len,
		   const char *name, size_t n)
{
	size_t i = off, j = 0;

	while (i < off + len)
		if (j == n || next_cp(c->s, &i) != (unsigned char)name[j++])
			return false;
	return j == n;
}

static bool same_key(const struct checker *c, const struct seen_key *a,
		     size_t off, size_t len)
{
	size_t i = a->off, j = off;

	while (i < a->off + a->len && j < off + len)
		if (next_cp(c->s, &i) != next_cp(c->s, &j))
			return false;
	return i == a->off + a->len && j == off + len;
}

/* The limit of the array about to be pushed: its path is what the frames
 * read now, matched against each limit's "vips[].backends". */
static const struct json_strict_count *array_count(const struct checker *c)
{
	const struct json_strict_count *n;
	const struct frame *f;
	const char *p;
	unsigned int i;
	size_t k, len;

	for (k = 0; k < c->lim->n_counts; k++) {
		n = &c->lim->counts[k];
		p = n->path;
		for (i = 0; i < c->depth && p; i++) {
			f = &c->frames[i];
			if (f->array) {
				p = strncmp(p, "[]", 2) ? NULL : p + 2;
				continue;
			}
			if (i && *p++ != '.') {
				p = NULL;
				break;
			}
			len = strcspn(p, ".[");
			p = key_is(c, f->key, f->key_len, p, len) ? p + len : NULL;
		}
		if (p && !*p)
			return n;
	}
	return NULL;
}

static uint64_t key_hash(const struct checker *c, size_t off, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	size_t i = off;

	while (i < off + len) {
		h ^= next_cp(c->s, &i);
		h *= 0x100000001b3ULL;
	}
	return h;
}

static size_t key_slot(const struct checker *c, uint64_t obj, uint64_t hash)
{
	return (hash ^ obj * 0x9e3779b97f4a7c15ULL) & (c->keys_cap - 1);
}

static int keys_grow(struct checker *c)
{
	size_t cap = c->keys_cap ? c->keys_cap * 2 : 64, i, j;
	struct seen_key *old = c->keys, *keys;

	keys = calloc(cap, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	c->keys = keys;
	c->keys_cap = cap;
	for (i = 0; old && i < cap / 2; i++) {
		if (!old[i].obj)
			continue;
		j = key_slot(c, old[i].obj, old[i].hash);
		while (keys[j].obj)
			j = (j + 1) & (cap - 1);
		keys[j] = old[i];
	}
	free(old);
	return 0;
}

/* Note the key just read in object f; a key it already has is an error. */
static int add_key(struct checker *c, const struct frame *f, size_t quote)
{
	char at[256];
	size_t line, col, i;
	uint64_t hash;

	if ((c->n_keys + 1) * 2 > c->keys_cap && keys_grow(c)) {
		snprintf(c->msg, c->msg_size, "out of memory checking the JSON text");
		return -ENOMEM;
	}
	hash = key_hash(c, f->key, f->key_len);
	for (i = key_slot(c, f->id, hash); c->keys[i].obj;
	     i = (i + 1) & (c->keys_cap - 1)) {
		if (c->keys[i].obj != f->id || c->keys[i].hash != hash ||
		    !same_key(c, &c->keys[i], f->key, f->key_len))
			continue;
		line_col(c, quote, &line, &col);
		path(c, c->depth - 1, at, sizeof(at));
		snprintf(c->msg, c->msg_size,
			 "%s%sduplicate key \"%.*s\" at line %zu, column %zu",
			 at, *at ? ": " : "",
			 (int)(f->key_len < PATH_KEY_MAX ? f->key_len : PATH_KEY_MAX),
			 c->s + f->key, line, col);
		return -EINVAL;
	}
	c->keys[i] = (struct seen_key){
		.obj = f->id, .hash = hash, .off = f->key, .len = f->key_len,
	};
	c->n_keys++;
	return 0;
}

/* \X at pos, in a string. */
static int escape(struct checker *c)
{
	size_t at = c->pos;
	unsigned int u, lo;
	char e;

	if (at + 1 >= c->len)
		return eof(c);
	e = c->s[at + 1];
	if (e && strchr("\"\\/bfnrt", e)) {
		c->pos += 2;
		return 0;
	}
	if (e != 'u') {
		if (e > ' ' && e < 0x7f)
			return syntax(c, at, "bad escape '\\%c'", e);
		return syntax(c, at, "bad escape: '\\' before byte 0x%02x",
			      (unsigned char)e);
	}
	for (c->pos = at + 2; c->pos < at + 6; c->pos++) {
		if (c->pos >= c->len)
			return eof(c);
		if (!is_hex(c->s[c->pos]))
			return syntax(c, at, "bad escape: \\u takes 4 hex digits");
	}
	u = hex4(c->s + at + 2);
	/* json-c would end the string there: "a\u0000b" would read "a". */
	if (!u)
		return syntax(c, at, "a string may not contain NUL (\\u0000)");
	if (u >= 0xdc00 && u < 0xe000)
		return syntax(c, at, "unpaired surrogate \\u%04x", u);
	if (u < 0xd800 || u >= 0xdc00)
		return 0;
	/* A high surrogate: only with the low one it pairs with. */
	if (c->len - c->pos < 6 || c->s[c->pos] != '\\' || c->s[c->pos + 1] != 'u' ||
	    !is_hex(c->s[c->pos + 2]) || !is_hex(c->s[c->pos + 3]) ||
	    !is_hex(c->s[c->pos + 4]) || !is_hex(c->s[c->pos + 5]))
		return syntax(c, at, "unpaired surrogate \\u%04x", u);
	lo = hex4(c->s + c->pos + 2);
	if (lo < 0xdc00 || lo >= 0xe000)
		return syntax(c, at, "unpaired surrogate \\u%04x", u);
	c->pos += 6;
	return 0;
}

static int string(struct checker *c)
{
	const unsigned char *s = (const unsigned char *)c->s;
	size_t n;
	int err;

	for (c->pos++;; ) {
		if (c->pos >= c->len)
			return eof(c);
		if (s[c->pos] == '"') {
			c->pos++;
			return 0;
		}
		if (s[c->pos] < 0x20)
			return syntax(c, c->pos, "control character U+%04X in a string: it must be escaped",
				      s[c->pos]);
		if (s[c->pos] == '\\') {
			err = escape(c);
			if (err)
				return err;
			continue;
		}
		if (s[c->pos] < 0x80) {
			c->pos++;
			continue;
		}
		n = utf8_len(s + c->pos, c->len - c->pos);
		if (!n)
			return syntax(c, c->pos, "invalid UTF-8");
		c->pos += n;
	}
}

static bool glued(const struct checker *c)
{
	char ch = c->pos < c->len ? c->s[c->pos] : ' ';

	return is_digit(ch) || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') ||
	       ch == '.' || ch == '_' || ch == '+' || ch == '-';
}

static void digits(struct checker *c)
{
	while (c->pos < c->len && is_digit(c->s[c->pos]))
		c->pos++;
}

static int number(struct checker *c)
{
	size_t start = c->pos;
	char f[16];

	if (c->s[c->pos] == '-')
		c->pos++;
	if (c->pos >= c->len)
		return eof(c);
	if (c->s[c->pos] == '0') {
		c->pos++;
		if (c->pos < c->len && is_digit(c->s[c->pos]))
			return syntax(c, start, "a number may not have a leading zero");
	} else if (is_digit(c->s[c->pos])) {
		digits(c);
	} else {
		return not_json(c, "a digit after '-'");
	}
	if (c->pos < c->len && c->s[c->pos] == '.') {
		c->pos++;
		if (c->pos >= c->len)
			return eof(c);
		if (!is_digit(c->s[c->pos]))
			return syntax(c, c->pos, "expected a digit after '.', found %s",
				      found(c, f, sizeof(f)));
		digits(c);
	}
	if (c->pos < c->len && (c->s[c->pos] | 0x20) == 'e') {
		c->pos++;
		if (c->pos < c->len && (c->s[c->pos] == '+' || c->s[c->pos] == '-'))
			c->pos++;
		if (c->pos >= c->len)
			return eof(c);
		if (!is_digit(c->s[c->pos]))
			return syntax(c, c->pos, "expected a digit in the exponent, found %s",
				      found(c, f, sizeof(f)));
		digits(c);
	}
	if (glued(c))
		return syntax(c, start, "bad number: %s after its digits",
			      found(c, f, sizeof(f)));
	return 0;
}

static int literal(struct checker *c, const char *word)
{
	size_t n = strlen(word), left = c->len - c->pos;

	if (left < n && !memcmp(c->s + c->pos, word, left))
		return eof(c);
	if (left < n || memcmp(c->s + c->pos, word, n))
		return syntax(c, c->pos, "expected '%s'", word);
	c->pos += n;
	if (glued(c))
		return syntax(c, c->pos - n, "expected '%s'", word);
	return 0;
}

static int push(struct checker *c, bool array,
		const struct json_strict_count *count)
{
	struct frame *f;
	char at[256];
	size_t line, col;

	if (c->depth >= c->max_depth) {
		line_col(c, c->pos, &line, &col);
		path(c, c->depth, at, sizeof(at));
		snprintf(c->msg, c->msg_size,
			 "%s%sarrays and objects nested deeper than %u (line %zu, column %zu)",
			 at, *at ? ": " : "", c->max_depth, line, col);
		return -EINVAL;
	}
	f = &c->frames[c->depth++];
	memset(f, 0, sizeof(*f));
	f->array = array;
	f->count = count;
	if (!array)
		f->id = ++c->objects;
	c->pos++;	/* [ or { */
	return 0;
}

static int value(struct checker *c);

static int object(struct checker *c)
{
	struct frame *f;
	size_t quote, comma = 0;
	char fd[16];
	int err;

	err = push(c, false, NULL);
	if (err)
		return err;
	f = &c->frames[c->depth - 1];
	skip_ws(c);
	if (c->pos < c->len && c->s[c->pos] == '}')
		goto done;
	for (;;) {
		skip_ws(c);
		if (c->pos < c->len && c->s[c->pos] == '}' && comma)
			return syntax(c, comma, "trailing comma before '}'");
		if (c->pos >= c->len || c->s[c->pos] != '"')
			return not_json(c, "a key in double quotes");
		quote = c->pos;
		err = string(c);
		if (err)
			return err;
		f->key = quote + 1;
		f->key_len = c->pos - quote - 2;
		err = add_key(c, f, quote);
		if (err)
			return err;
		skip_ws(c);
		if (c->pos >= c->len)
			return eof(c);
		if (c->s[c->pos] != ':')
			return syntax(c, c->pos, "expected ':' after the key, found %s",
				      found(c, fd, sizeof(fd)));
		c->pos++;
		f->in_item = true;
		err = value(c);
		if (err)
			return err;
		f->in_item = false;
		skip_ws(c);
		if (c->pos >= c->len)
			return eof(c);
		if (c->s[c->pos] == '}')
			break;
		if (c->s[c->pos] != ',')
			return not_json(c, "',' or '}'");
		comma = c->pos++;
	}
done:
	c->pos++;
	c->depth--;
	return 0;
}

static int array(struct checker *c)
{
	const struct json_strict_count *count = array_count(c);
	struct frame *f;
	size_t comma = 0;
	int err;

	err = push(c, true, count);
	if (err)
		return err;
	f = &c->frames[c->depth - 1];
	skip_ws(c);
	if (c->pos < c->len && c->s[c->pos] == ']')
		goto done;
	for (;;) {
		skip_ws(c);
		if (c->pos < c->len && c->s[c->pos] == ']' && comma)
			return syntax(c, comma, "trailing comma before ']'");
		/* Before reading it: what a parser builds stays within
		 * the limit. */
		if (count && f->index >= count->max)
			return too_many(c, f);
		f->in_item = true;
		err = value(c);
		if (err)
			return err;
		f->in_item = false;
		skip_ws(c);
		if (c->pos >= c->len)
			return eof(c);
		if (c->s[c->pos] == ']')
			break;
		if (c->s[c->pos] != ',')
			return not_json(c, "',' or ']'");
		comma = c->pos++;
		f->index++;
	}
done:
	c->pos++;
	c->depth--;
	return 0;
}

static int value(struct checker *c)
{
	skip_ws(c);
	if (c->pos >= c->len)
		return eof(c);
	if (c->lim->max_values && ++c->values > c->lim->max_values)
		return too_many_values(c);
	switch (c->s[c->pos]) {
	case '{':
		return object(c);
	case '[':
		return array(c);
	case '"':
		return string(c);
	case 't':
		return literal(c, "true");
	case 'f':
		return literal(c, "false");
	case 'n':
		return literal(c, "null");
	case '-':
	case '0' ... '9':
		return number(c);
	}
	return not_json(c, "a value");
}

int json_strict_check(const char *text, size_t len,
		      const struct json_strict_limits *limits, char *msg,
		      size_t msg_size)
{
	static const struct json_strict_limits none;
	struct checker c = {
		.s = text,
		.len = len,
		.lim = limits ? limits : &none,
		.msg = msg,
		.msg_size = msg_size,
	};
	int err;

	c.max_depth = c.lim->max_depth && c.lim->max_depth < DEPTH_CAP ?
		      c.lim->max_depth : DEPTH_CAP;
	err = value(&c);
	if (!err) {
		skip_ws(&c);
		if (c.pos < c.len)
			err = syntax(&c, c.pos, "text after the JSON value");
	}
	free(c.keys);
	return err;
}
