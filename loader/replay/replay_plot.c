// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb replay --plot DIR`: PNG charts drawn by gnuplot.
 *   load.png        flows per backend over the fair share, busiest first,
 *                   per algorithm, inside the band of uniformly random
 *                   assignments of the same flows
 *   disruption.png  flows moved by the change per algorithm, split into
 *                   the moves the change forces and the extra ones, with
 *                   the optimum
 *   overview.png    both side by side
 * gnuplot works in a temporary directory inside DIR; the charts are
 * renamed into place once all are drawn.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "report.h"
#include "replay_report.h"

extern char **environ;

static const char *const chart_names[] = {
	"load.png", "disruption.png", "overview.png",
};

static int cmp_u64_desc(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* load.dat: rank, random p01, p99, then one column per algorithm. */
static int write_load_data(const struct replay_report *r, FILE *f)
{
	const struct replay_random *rnd = &r->random[0];
	size_t n = r->n_set[0], i;
	__u64 *sorted[LB__MAX] = {};
	__u64 w = 0;
	char label[32];
	int k, err = 0;

	for (i = 0; i < n; i++)
		w += r->set[0][i].weight;
	fprintf(f, "rank random_p01 random_p99");
	for (k = 0; k < LB__MAX; k++) {
		if (!r->algo[k].done)
			continue;
		fprintf(f, " %s", replay_algo_label(r, k, label, sizeof(label)));
		sorted[k] = calloc(n, sizeof(__u64));
		if (!sorted[k]) {
			err = -ENOMEM;
			goto cleanup;
		}
		/* Scaled by weight so weighted sets read the same way. */
		for (i = 0; i < n; i++)
			sorted[k][i] = r->set[0][i].weight ?
				r->algo[k].load[0][i].v[RM_FLOWS] * 1000000 /
				r->set[0][i].weight : 0;
		qsort(sorted[k], n, sizeof(__u64), cmp_u64_desc);
	}
	fprintf(f, "\n");
	for (i = 0; i < n; i++) {
		if (i < rnd->n_rank)
			fprintf(f, "%zu %.6f %.6f", i + 1, rnd->by_rank[i].p01,
				rnd->by_rank[i].p99);
		else
			fprintf(f, "%zu NaN NaN", i + 1);
		for (k = 0; k < LB__MAX; k++)
			if (sorted[k])
				fprintf(f, " %.6f", (double)sorted[k][i] * w /
					1000000 / (r->rf.n ? r->rf.n : 1));
		fprintf(f, "\n");
	}
cleanup:
	for (k = 0; k < LB__MAX; k++)
		free(sorted[k]);
	return err;
}

/* disruption.dat: algorithm, forced moves %, extra moves %. */
static void write_disruption_data(const struct replay_report *r, FILE *f)
{
	char label[32];
	int k;

	fprintf(f, "# algorithm forced extra\n");
	for (k = 0; k < LB__MAX; k++) {
		const struct replay_disruption *d = &r->algo[k].dis;
		double n = d->flows ? (double)d->flows : 1;

		if (!r->algo[k].done)
			continue;
		fprintf(f, "%s %.4f %.4f\n",
			replay_algo_label(r, k, label, sizeof(label)),
			100 * (d->moved - d->moved_kept) / n,
			100 * d->moved_kept / n);
	}
}

static int count_algos(const struct replay_report *r)
{
	int k, n = 0;

	for (k = 0; k < LB__MAX; k++)
		n += r->algo[k].done;
	return n;
}

static void load_plot(const struct replay_report *r, FILE *f)
{
	const struct replay_random *rnd = &r->random[0];

	fprintf(f,
		"set title \"Flows per backend / fair share, busiest first\\n"
		"%zu flows, %zu backends\" noenhanced\n"
		"set xlabel 'backends, busiest first'\n"
		"set ylabel 'flows / fair share'\n"
		"set grid ytics\n"
		"set key top right noenhanced\n"
		"set xrange [0.5:%zu.5]\n",
		r->rf.n, r->n_set[0], r->n_set[0]);
	fprintf(f, "plot ");
	if (rnd->n_rank)
		fprintf(f, "'load.dat' using 1:2:3 with filledcurves "
			"fc rgb '#d8d8d8' title 'uniform random, 1st-99th pct', ");
	else
		fprintf(f, "%.6f with lines dt 2 lc rgb '#808080' title "
			"'uniform random max/mean, 99th pct', ",
			rnd->max_mean[RM_FLOWS].p99);
	fprintf(f, "for [c=4:%d] 'load.dat' using 1:c with linespoints "
		"pt 7 ps 0.5 lw 1.5 title columnheader(c)\n",
		3 + count_algos(r));
}

/*
 * The consistent algorithms move about the optimum, modulo nearly every
 * flow: on one linear scale the difference between Maglev and the ring
 * would be a few pixels. The scale follows the bars near the optimum;
 * taller ones are cut at the top, their value written there.
 */
static double disruption_scale(const struct replay_report *r, double opt)
{
	double near = 0, all = 0;
	int k;

	for (k = 0; k < LB__MAX; k++) {
		double f = r->algo[k].dis.fraction;

		if (!r->algo[k].done)
			continue;
		all = f > all ? f : all;
		if (f <= 5 * opt)
			near = f > near ? f : near;
	}
	near = 100 * (near * 1.5 > opt * 2 ? near * 1.5 : opt * 2);
	return 100 * all > near && near > 0 ? near : 0;
}

static void disruption_plot(const struct replay_report *r, FILE *f)
{
	double opt = 0, cap;
	int k;

	for (k = 0; k < LB__MAX; k++)
		if (r->algo[k].done)
			opt = r->algo[k].dis.optimum;
	cap = disruption_scale(r, opt);
	fprintf(f,
		"set title \"Flows moved by the change: %s\\n%zu flows\" noenhanced\n"
		"set ylabel '%% of flows'\n"
		"set xlabel ''\n"
		"set grid ytics\n"
		"set key top left noenhanced\n"
		"set style data histograms\n"
		"set style histogram rowstacked\n"
		"set style fill solid 0.8 border -1\n"
		"set boxwidth 0.6\n"
		"set xrange [-0.5:%d.5]\n",
		r->change_text, r->rf.n, count_algos(r) - 1);
	if (cap > 0)
		fprintf(f, "cap = %.6f\nset yrange [0:cap]\n", cap);
	else
		fprintf(f, "cap = 1e9\nset yrange [0:*]\n");
	fprintf(f,
		"plot 'disruption.dat' using 2:xtic(1) lc rgb '#4878a8' "
		"title 'to or from the changed backends', "
		"'' using 3 lc rgb '#d05040' title 'between unchanged backends', "
		"%.6f with lines dt 2 lw 2 lc rgb 'black' title 'optimum %.2f%%', "
		"'' using 0:($2+$3 > cap ? cap * 0.93 : $2+$3):"
		"($2+$3 > cap ? sprintf('%%.1f%%%% (cut)', $2+$3) : "
		"sprintf('%%.1f%%%%', $2+$3)) with labels offset 0,0.8 notitle\n",
		100 * opt, 100 * opt);
}

static int write_script(const struct replay_report *r, FILE *f)
{
	bool change = r->change != CHANGE_NONE;

	fprintf(f, "set terminal pngcairo size 900,600 font ',10'\n"
		"set output 'load.png'\n");
	load_plot(r, f);
	if (!change)
		return 0;
	fprintf(f, "reset\nset output 'disruption.png'\n");
	disruption_plot(r, f);
	fprintf(f, "reset\nset terminal pngcairo size 1600,600 font ',10'\n"
		"set output 'overview.png'\n"
		"set multiplot layout 1,2\n");
	load_plot(r, f);
	fprintf(f, "reset\n");
	disruption_plot(r, f);
	fprintf(f, "unset multiplot\n");
	return 0;
}

static int run_gnuplot(const char *dir)
{
	char *argv[] = { "gnuplot", "plot.gp", NULL };
	posix_spawn_file_actions_t fa;
	int status, err;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	/* gnuplot reads and writes relative to the work directory. */
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	err = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		p_err("cannot run gnuplot: %s (install gnuplot-nox)",
		      strerror(err));
		return -err;
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		p_err("gnuplot failed; no chart written");
		return -EIO;
	}
	return 0;
}

static int write_file(const char *dir, const char *name,
		      const struct replay_report *r,
		      int (*fn)(const struct replay_report *, FILE *))
{
	char path[4096];
	FILE *f;
	int err;

	if (out_path(path, sizeof(path), dir, name))
		return -ENAMETOOLONG;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	err = fn(r, f);
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

static int disruption_data(const struct replay_report *r, FILE *f)
{
	write_disruption_data(r, f);
	return 0;
}

/* Remove the work directory and what is left in it. */
static void remove_work(const char *work)
{
	static const char *const names[] = {
		"load.dat", "disruption.dat", "plot.gp",
		"load.png", "disruption.png", "overview.png",
	};
	char path[4096];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!out_path(path, sizeof(path), work, names[i]))
			unlink(path);
	rmdir(work);
}

int replay_write_plots(const struct replay_report *r, const char *dir)
{
	size_t n_charts = r->change == CHANGE_NONE ? 1 : 3, i;
	char work[4096], from[4096], to[4096];
	int err;

	err = out_dir_prepare(dir);
	if (err)
		return err;
	if (out_path(work, sizeof(work), dir, ".xlb-replay.XXXXXX")) {
		p_err("%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(work)) {
		err = -errno;
		p_err("%s: cannot create a work directory: %s", dir,
		      strerror(errno));
		return err;
	}
	err = write_file(work, "load.dat", r, write_load_data);
	if (!err && r->change != CHANGE_NONE)
		err = write_file(work, "disruption.dat", r, disruption_data);
	if (!err)
		err = write_file(work, "plot.gp", r, write_script);
	if (err) {
		p_err("%s: cannot write chart data: %s", dir, strerror(-err));
		goto cleanup;
	}
	err = run_gnuplot(work);
	if (err)
		goto cleanup;
	for (i = 0; i < n_charts; i++) {
		err = out_path(from, sizeof(from), work, chart_names[i]) ?:
		      out_path(to, sizeof(to), dir, chart_names[i]);
		if (!err && rename(from, to))
			err = -errno;
		if (err) {
			p_err("%s/%s: %s", dir, chart_names[i], strerror(-err));
			goto cleanup;
		}
	}
cleanup:
	remove_work(work);
	return err;
}
