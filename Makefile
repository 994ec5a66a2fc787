# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make            build everything into $(BUILD)/
# make test       install missing Debian packages, build, run the whole suite
# make demo       install, build, run the demo on a network-namespace topology
# make bench      run every benchmark and print a BENCHMARKS.md-ready report
# make vmtest     run the suite inside a VM on another kernel (KERNEL=bzImage)
# make install    install xlb, the balancer's and the backends' BPF objects,
#                 xlb(8) and the systemd units (see the install target)
# make fuzz       build the fuzz targets (fuzz/) and run each for FUZZ_SECONDS (60)
# make check-sanitize  xlb with ASan and UBSan in build/san/, and the CLI and
#                 loader tests against it
# V=1             show full commands

BUILD      ?= build
PREFIX     ?= /usr/local
CC         ?= cc
CLANG      ?= clang
CLANG19    ?= clang-19
BPFTOOL    ?= bpftool

ifeq ($(V),1)
Q   =
msg =
else
Q   = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

ARCH_INCLUDE := /usr/include/$(shell $(CC) -dumpmachine 2>/dev/null)

# loader/ is layered: each folder includes only the folders before it in
# LAYERS (tests/test_layers.sh checks it). The command line comes last.
LAYERS     := common algo sim instance host health inspect replay cli
LAYER_INC  := $(addprefix -Iloader/,$(LAYERS))

# `xlb version`: the tag or commit built, "-dirty" with local changes.
XLB_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)

WARN       := -Wall -Wextra -Werror
CFLAGS     ?= -O2 -g
XLB_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude $(LAYER_INC) -I$(BUILD) -MMD -MP
LDLIBS     := -lxdp -lbpf -lpcap -ljson-c -lmicrohttpd -lelf -lz -lm
# The machine the datapath runs on (bpf/conntrack.h builds for x86 only).
BPF_ARCH   := $(patsubst x86_64,x86,$(patsubst i%86,x86,$(patsubst aarch64,arm64,$(shell uname -m))))
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(BPF_ARCH) $(WARN) -Iinclude -Ibpf \
              -I$(ARCH_INCLUDE) -MMD -MP

# BPF programs: the datapath and the backend side (bpf/), benchmark-only
# programs (bench/bpf/), the traffic generator's (tools/). Objects and
# skeletons all land in $(BUILD)/.
BPF_SRCS    := $(wildcard bpf/*.bpf.c bench/bpf/*.bpf.c tools/*.bpf.c)
BPF_OBJS    := $(addprefix $(BUILD)/,$(notdir $(BPF_SRCS:.bpf.c=.bpf.o)))
SKELS       := $(BPF_OBJS:.bpf.o=.skel.h)
vpath %.bpf.c bpf bench/bpf tools

LIB_SRCS    := $(wildcard $(addsuffix /*.c,$(addprefix loader/,$(filter-out cli,$(LAYERS)))))
LIB_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS))
CLI_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(wildcard loader/cli/*.c))
LIBXLB      := $(BUILD)/libxlb.a

# The test build of xlb: the same objects, but the instance layer stops
# where tests/lib/fault.c says (XLB_TEST_BUILD). The shipped xlb has none of it.
TEST_LIB_OBJS := $(filter-out $(BUILD)/loader/instance/instance.o,$(LIB_OBJS)) \
                 $(BUILD)/test-build/instance.o $(BUILD)/test-build/fault.o
XLB_TEST    := $(BUILD)/tests/xlb-test

# Every tests/*.c, bench/*.c and tools/*.c is a program of its own, linked
# with libxlb.
TEST_SRCS   := $(wildcard tests/*.c)
TEST_BINS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
BENCH_SRCS  := $(wildcard bench/*.c)
BENCH_BINS  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
TOOL_SRCS   := $(filter-out %.bpf.c,$(wildcard tools/*.c))
TOOL_BINS   := $(patsubst tools/%.c,$(BUILD)/tools/%,$(TOOL_SRCS))

# The XDP programs again in section xdp.frags (built with XLB_FRAGS), for
# `ip link ... xdp obj` at a jumbo MTU: the balancer's, the backends', and
# the test topologies' pass.bpf.o.
FRAGS_OBJS  := $(BUILD)/xlb.frags.bpf.o $(BUILD)/decap.frags.bpf.o $(BUILD)/pass.frags.bpf.o

# The same datapath built by clang 19, to check it loads with either compiler.
BPF19_OBJ   := $(if $(shell command -v $(CLANG19) 2>/dev/null),$(BUILD)/clang19/xlb.bpf.o)

.DELETE_ON_ERROR:
.PHONY: all deps test bench demo vmtest install clean

all: $(BPF_OBJS) $(SKELS) $(BUILD)/xlb $(XLB_TEST) $(TEST_BINS) $(BENCH_BINS) $(TOOL_BINS) $(BPF19_OBJ) $(FRAGS_OBJS)

$(BUILD)/%.bpf.o: %.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# A program in section xdp.frags (FRAGS_OBJS). The shorter stem wins over
# the rule above.
$(BUILD)/%.frags.bpf.o: %.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DXLB_FRAGS -c $< -o $@

$(BUILD)/clang19/%.bpf.o: bpf/%.bpf.c
	$(call msg,BPF19,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG19) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@

# Skeletons are generated headers: build them before any C file that may
# include one (the -MMD files take over once they exist).
$(BUILD)/loader/%.o: loader/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) -c $< -o $@

$(BUILD)/loader/cli/cmd_version.o: XLB_CFLAGS += -DXLB_VERSION='"$(XLB_VERSION)"'

$(BUILD)/test-build/instance.o: loader/instance/instance.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) -DXLB_TEST_BUILD -c $< -o $@

$(BUILD)/test-build/fault.o: tests/lib/fault.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) -c $< -o $@

$(LIBXLB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/xlb: $(CLI_OBJS) $(LIBXLB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XLB_CFLAGS) $^ $(LDLIBS) -o $@

$(XLB_TEST): $(CLI_OBJS) $(TEST_LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c $(LIBXLB) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) -Itests/lib $< $(LIBXLB) $(LDLIBS) -o $@

$(BUILD)/bench/%: bench/%.c $(LIBXLB) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) -Itests/lib $< $(LIBXLB) $(LDLIBS) -o $@

$(BUILD)/tools/%: tools/%.c $(LIBXLB) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) $< $(LIBXLB) $(LDLIBS) -o $@

deps:
	$(Q)scripts/deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) tests/run.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) bench/run.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) scripts/demo.sh

vmtest: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) vmtest/run.sh $(KERNEL)

# make install [PREFIX=/usr/local] [DESTDIR=] [UNITDIR=] [SYSCONFDIR=/etc]:
#   $(PREFIX)/sbin/xlb
#   $(PREFIX)/lib/xlb/xlb.bpf.o      the balancer's program, for `ip link ... xdp obj`
#   $(PREFIX)/lib/xlb/xlb.frags.bpf.o  the same, multi-buffer (sec xdp.frags: jumbo MTUs)
#   $(PREFIX)/lib/xlb/decap.bpf.o    the backends' decapsulation without tunnel drivers
#   $(PREFIX)/lib/xlb/decap.frags.bpf.o  the same, multi-buffer (sec xdp.frags: jumbo MTUs)
#   $(PREFIX)/share/man/man8/xlb.8
#   $(UNITDIR)/xlb.service           attach and apply the state file at boot
#   $(UNITDIR)/xlb-health.service    the health checker
#   $(UNITDIR)/xlb-exporter.service  the counters over HTTP for Prometheus
#   $(UNITDIR)/xlb-host.service      a backend host: xlb host setup at boot
#   $(SYSCONFDIR)/default/xlb        the units' settings, kept when it exists
#   $(SYSCONFDIR)/default/xlb-host   xlb-host.service's, likewise
#   $(SYSCONFDIR)/xlb/               for the state file, state.json
# The units name $(PREFIX) and $(SYSCONFDIR) without DESTDIR, as the
# installed system sees them.
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
UNIT_SED   := -e 's|@SBINDIR@|$(PREFIX)/sbin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

install: $(BUILD)/xlb $(BUILD)/xlb.bpf.o $(BUILD)/xlb.frags.bpf.o $(BUILD)/decap.bpf.o \
	 $(BUILD)/decap.frags.bpf.o
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 $(BUILD)/xlb $(DESTDIR)$(PREFIX)/sbin/xlb
	$(Q)install -D -m 0644 $(BUILD)/xlb.bpf.o $(DESTDIR)$(PREFIX)/lib/xlb/xlb.bpf.o
	$(Q)install -D -m 0644 $(BUILD)/xlb.frags.bpf.o $(DESTDIR)$(PREFIX)/lib/xlb/xlb.frags.bpf.o
	$(Q)install -D -m 0644 $(BUILD)/decap.bpf.o $(DESTDIR)$(PREFIX)/lib/xlb/decap.bpf.o
	$(Q)install -D -m 0644 $(BUILD)/decap.frags.bpf.o $(DESTDIR)$(PREFIX)/lib/xlb/decap.frags.bpf.o
	$(Q)install -D -m 0644 docs/xlb.8 $(DESTDIR)$(PREFIX)/share/man/man8/xlb.8
	$(Q)mkdir -p $(BUILD)/systemd
	$(Q)for f in xlb.service xlb-health.service xlb-exporter.service xlb-host.service \
		     xlb.default xlb-host.default; do \
		sed $(UNIT_SED) systemd/$$f.in >$(BUILD)/systemd/$$f || exit 1; \
	done
	$(Q)install -D -m 0644 -t $(DESTDIR)$(UNITDIR) $(BUILD)/systemd/xlb.service \
		$(BUILD)/systemd/xlb-health.service $(BUILD)/systemd/xlb-exporter.service \
		$(BUILD)/systemd/xlb-host.service
	$(Q)for f in xlb xlb-host; do \
		test -e $(DESTDIR)$(SYSCONFDIR)/default/$$f || \
		install -D -m 0644 $(BUILD)/systemd/$$f.default \
			$(DESTDIR)$(SYSCONFDIR)/default/$$f || exit 1; \
	done
	$(Q)install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/xlb

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)

include fuzz/fuzz.mk

-include $(wildcard $(BUILD)/*.d $(BUILD)/*/*.d $(BUILD)/*/*/*.d)
