# gappace: the one entry point.
#
#   make            userspace (CMake) and the module (Kbuild, against KDIR)
#   make deps       install every Debian package the build and the tests need
#   make check      all tests: unit tests, then the guest-kernel tests
#   make check-vm   guest-kernel tests only (QEMU, Debian's 6.1 and 6.12 kernels)
#   make bench      Google Benchmark suite
#   make bench-system  the all-to-all collapse and its removal on the namespace cluster
#   make demo       the collapse and its removal (see README.md); demo-vm: gap frames in a guest
#
# KDIR defaults to the running kernel's build tree and falls back to the newest
# installed Debian linux-headers; set it to build the module for another kernel.

BUILD ?= build
JOBS ?= $(shell nproc)
KDIR ?= $(shell d=/lib/modules/$$(uname -r)/build; \
	if [ -f $$d/Makefile ]; then echo $$d; \
	else ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n1; fi)
KVER := $(patsubst linux-headers-%,%,$(notdir $(patsubst %/build,%,$(KDIR))))

all: userspace module

userspace:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

module:
	@test -n "$(KDIR)" || { echo "no kernel build tree: run 'make deps' or set KDIR" >&2; exit 1; }
	$(MAKE) -C kmod KDIR=$(KDIR) BUILD_DIR=$(abspath $(BUILD))/kmod/$(KVER)
	@echo "module: $(BUILD)/kmod/$(KVER)/gappace.ko"

deps:
	bash tests/deps.sh

check: check-unit check-vm

check-unit: userspace
	ctest --test-dir $(BUILD) --output-on-failure

check-vm: userspace
	bash tests/vm/check.sh --build $(abspath $(BUILD))

bench: userspace
	$(BUILD)/tools/bench/pace_bench
	$(BUILD)/tools/bench/hint_bench
	$(BUILD)/tools/bench/planner_bench
	$(BUILD)/tools/bench/socket_table_bench
	$(BUILD)/tools/bench/exchange_bench
	@# hint_latency exits 77 (and says why) without root or network namespaces.
	$(BUILD)/tools/bench/hint_latency; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ] || exit $$rc

# Options for tools/bench/system/bench-system.sh, e.g. BENCH_ARGS="--topologies 4+4 --reps 1".
BENCH_ARGS ?=
# It rewrites the results section of Documentation/performance.md (tables and plots).
bench-system: userspace
	bash tools/bench/system/bench-system.sh --build $(abspath $(BUILD)) \
		--publish $(abspath Documentation/performance.md) \
		--publish-models $(abspath Documentation/models.md) $(BENCH_ARGS)

# Installs its own packages and builds only what it runs (a fresh machine: a few minutes).
demo:
	bash tools/bench/system/demo.sh

# The gap-frame pacing demonstration in a QEMU guest (wire capture of one paced flow).
demo-vm: userspace
	bash tests/vm/demo.sh --build $(abspath $(BUILD))

clean:
	rm -rf $(BUILD)

.PHONY: all userspace module deps check check-unit check-vm bench bench-system demo demo-vm clean
