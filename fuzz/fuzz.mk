# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Fuzzing and the sanitizer build, included by the Makefile.
#
# make fuzz            build the libFuzzer targets (fuzz/fuzz_*.c) into
#                      $(BUILD)/fuzz/ and run each for FUZZ_SECONDS
# make fuzz-build      only build them
# make fuzz-seeds      write the captures of fuzz/corpus/pcap/ again
# make check-sanitize  build xlb with ASan and UBSan into $(SAN_BUILD)/ and
#                      run the command-line and loader tests against it
#
# The targets compile the loader's sources themselves, instrumented, rather
# than linking $(LIBXLB), which is built without the sanitizers.

ifndef XLB_FUZZ_MK
XLB_FUZZ_MK := 1

FUZZ_CC      ?= $(CLANG)
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -Wall -Wextra \
                -Wno-missing-field-initializers \
                -std=gnu11 -D_GNU_SOURCE -Iinclude $(LAYER_INC) -I$(BUILD) -MMD -MP

# One target per fuzz/fuzz_NAME.c, built as $(FUZZ_DIR)/fuzz_NAME and run
# on fuzz/corpus/NAME/ (with fuzz/NAME.dict when there is one).
FUZZ_SRCS    := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS    := $(patsubst fuzz/%.c,$(FUZZ_DIR)/%,$(FUZZ_SRCS))
# Every layer, the command line too (xlb apply is a command), but main().
FUZZ_LIB_SRCS := $(LIB_SRCS) $(filter-out loader/cli/main.c,$(wildcard loader/cli/*.c))
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(FUZZ_LIB_SRCS))
FUZZ_LIB     := $(FUZZ_DIR)/libxlb-fuzz.a

# The sanitizer build of xlb: the same Makefile in another build directory,
# with the sanitizers in CFLAGS (which the link takes too). Built by clang:
# its runtime writes every report to the files check-sanitize.sh reads
# (log_path), where GCC's libasan and libubsan write to stderr only.
# (ARCH_INCLUDE is passed as this Makefile found it: clang -dumpmachine
# names another triple than Debian's include directory.)
SAN_BUILD    ?= $(BUILD)/san
SAN_CC       ?= $(CLANG)
SAN_CFLAGS   ?= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined
# The tests of the command line and the loader: every test_cli_*.sh and
# test_loader_*.sh, and the other scripts that drive xlb on an instance
# or on a backend host.
SAN_TESTS    ?= $(wildcard tests/test_cli_*.sh tests/test_loader_*.sh) \
                tests/test_conntrack_cli.sh tests/test_corrupt_records.sh \
                tests/test_host_setup.sh tests/test_neigh_owner.sh \
                tests/test_vip_local.sh tests/test_other_netns.sh \
                tests/test_service_restart.sh tests/test_rates.sh

.PHONY: fuzz fuzz-build fuzz-seeds check-sanitize

fuzz-build: $(FUZZ_BINS)

fuzz: deps fuzz-build
	$(Q)BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) fuzz/run.sh

$(FUZZ_DIR)/obj/%.o: %.c | $(SKELS)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/obj/loader/cli/cmd_version.o: FUZZ_CFLAGS += -DXLB_VERSION='"$(XLB_VERSION)"'

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_LIB) | $(SKELS)
	$(call msg,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror -fsanitize=fuzzer $< $(FUZZ_LIB) $(LDLIBS) -o $@

# The seed captures: gentrace's, and mkseeds' (one frame of each kind).
$(FUZZ_DIR)/mkseeds: fuzz/mkseeds.c $(LIBXLB) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XLB_CFLAGS) $< $(LIBXLB) $(LDLIBS) -o $@

fuzz-seeds: $(FUZZ_DIR)/mkseeds $(BUILD)/tools/gentrace
	$(Q)BUILD=$(BUILD) fuzz/seeds.sh

# A build made with other flags (another SAN_CC or SAN_CFLAGS) is
# started afresh: make compares times, not flags.
check-sanitize: deps
	$(Q)flags='$(SAN_CC) $(SAN_CFLAGS)'; \
	if [ "$$(cat $(SAN_BUILD)/.flags 2>/dev/null)" != "$$flags" ]; then \
		rm -rf $(SAN_BUILD) && mkdir -p $(SAN_BUILD) && echo "$$flags" >$(SAN_BUILD)/.flags; \
	fi
	$(Q)$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) CC=$(SAN_CC) CFLAGS='$(SAN_CFLAGS)' \
		WARN='$(WARN) -Wno-missing-field-initializers' ARCH_INCLUDE='$(ARCH_INCLUDE)' \
		$(SAN_BUILD)/xlb $(SAN_BUILD)/xlb.bpf.o $(SAN_BUILD)/xlb.frags.bpf.o $(SAN_BUILD)/pass.bpf.o \
		$(SAN_BUILD)/decap.frags.bpf.o $(SAN_BUILD)/hc.bpf.o
	$(Q)BUILD=$(SAN_BUILD) fuzz/check-sanitize.sh $(SAN_TESTS)

-include $(wildcard $(FUZZ_DIR)/*.d $(FUZZ_DIR)/obj/loader/*/*.d)

endif
