# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make            build everything into $(BUILD)/
# make test       install missing Debian packages, build, run the whole suite
# make demo       install, build, run the demo on a network-namespace topology
# make bench      run every benchmark and print a BENCHMARKS.md-ready report
# make vmtest     run the suite inside a VM on another kernel (KERNEL=bzImage)
# make install    install xlb, xlb.bpf.o and xlb(8) under $(DESTDIR)$(PREFIX)
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

WARN       := -Wall -Wextra -Werror
CFLAGS     ?= -O2 -g
XLB_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iloader -I$(BUILD) -MMD -MP
LDLIBS     := -lxdp -lbpf -lpcap -ljson-c -lelf -lz -lm
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 $(WARN) -Iinclude -Ibpf \
              -I$(ARCH_INCLUDE) -MMD -MP

BPF_SRCS    := $(wildcard bpf/*.bpf.c)
BPF_OBJS    := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS       := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

LOADER_SRCS := $(wildcard loader/*.c)
LOADER_OBJS := $(patsubst loader/%.c,$(BUILD)/loader/%.o,$(LOADER_SRCS))
LIB_OBJS    := $(filter-out $(BUILD)/loader/main.o,$(LOADER_OBJS))
LIBXLB      := $(BUILD)/libxlb.a

# Every tests/*.c and bench/*.c is a program of its own, linked with libxlb.
TEST_SRCS   := $(wildcard tests/*.c)
TEST_BINS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
BENCH_SRCS  := $(wildcard bench/*.c)
BENCH_BINS  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

# The same datapath built by clang 19, to check it loads with either compiler.
BPF19_OBJ   := $(if $(shell command -v $(CLANG19) 2>/dev/null),$(BUILD)/clang19/xlb.bpf.o)

.DELETE_ON_ERROR:
.PHONY: all deps test bench demo vmtest install clean

all: $(BPF_OBJS) $(SKELS) $(BUILD)/xlb $(TEST_BINS) $(BENCH_BINS) $(BPF19_OBJ)

$(BUILD) $(BUILD)/loader $(BUILD)/tests $(BUILD)/bench $(BUILD)/clang19:
	$(Q)mkdir -p $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/clang19/%.bpf.o: bpf/%.bpf.c | $(BUILD)/clang19
	$(call msg,BPF19,$@)
	$(Q)$(CLANG19) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@

# Skeletons are generated headers: build them before any C file that may
# include one (the -MMD files take over once they exist).
$(BUILD)/loader/%.o: loader/%.c | $(BUILD)/loader $(SKELS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(XLB_CFLAGS) -c $< -o $@

$(LIBXLB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/xlb: $(BUILD)/loader/main.o $(LIBXLB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XLB_CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c $(LIBXLB) | $(BUILD)/tests $(SKELS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(XLB_CFLAGS) -Itests $< $(LIBXLB) $(LDLIBS) -o $@

$(BUILD)/bench/%: bench/%.c $(LIBXLB) | $(BUILD)/bench $(SKELS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(XLB_CFLAGS) -Itests $< $(LIBXLB) $(LDLIBS) -o $@

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

install: $(BUILD)/xlb $(BUILD)/xlb.bpf.o
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 $(BUILD)/xlb $(DESTDIR)$(PREFIX)/sbin/xlb
	$(Q)install -D -m 0644 $(BUILD)/xlb.bpf.o $(DESTDIR)$(PREFIX)/lib/xlb/xlb.bpf.o
	$(Q)install -D -m 0644 docs/xlb.8 $(DESTDIR)$(PREFIX)/share/man/man8/xlb.8

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)

-include $(wildcard $(BUILD)/*.d $(BUILD)/*/*.d)
