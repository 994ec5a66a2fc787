// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <pcap/pcap.h>
#include "pcap_write.h"

#define SNAPLEN 65535

struct xlb_pcap_writer {
	pcap_t *pcap;
	pcap_dumper_t *dumper;
};

int xlb_pcap_create(const char *path, struct xlb_pcap_writer **wp)
{
	struct xlb_pcap_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->pcap = pcap_open_dead(DLT_EN10MB, SNAPLEN);
	if (w->pcap)
		w->dumper = pcap_dump_open(w->pcap, path);
	if (!w->dumper) {
		if (w->pcap)
			pcap_close(w->pcap);
		free(w);
		return -EIO;
	}
	*wp = w;
	return 0;
}

int xlb_pcap_add(struct xlb_pcap_writer *w, const void *frame, size_t len,
		 unsigned long long usec)
{
	struct pcap_pkthdr h = {
		.ts = { .tv_sec = usec / 1000000, .tv_usec = usec % 1000000 },
		.caplen = len > SNAPLEN ? SNAPLEN : len,
		.len = len,
	};

	pcap_dump((u_char *)w->dumper, &h, frame);
	return 0;
}

int xlb_pcap_close(struct xlb_pcap_writer *w)
{
	int err = pcap_dump_flush(w->dumper) ? -EIO : 0;

	pcap_dump_close(w->dumper);
	pcap_close(w->pcap);
	free(w);
	return err;
}
