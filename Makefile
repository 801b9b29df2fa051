# ccsweep - build, test, run, benchmark, install.
#   make            build ./ccsweep (and the tools)
#   make check      unit tests (cmocka) + integration tests (mpirun, sqlite3, slurm,
#                   a three-node cluster in network namespaces: tests/cluster)
#   make run        the default sweep into results/ccsweep.db
#   make bench      engine benchmarks (figures, no pass/fail)
#   make install    PREFIX=/usr/local DESTDIR=
#   make deps       install the Debian packages (as root), or print the command
#   make fuzz       libFuzzer harnesses (tests/fuzz) for FUZZ_SECONDS each (clang)
#   make format     lay out the C sources with clang-format (format-check: only check)
# Options: SANITIZE=1 (ASan+UBSan), WERROR=1, DEBUG=1, NDEBUG=1 (asserts off),
#          NP=<ranks for make run>

MPICC   ?= mpicc
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
DATADIR  = $(PREFIX)/share/ccsweep
DOCDIR   = $(PREFIX)/share/doc/ccsweep
MANDIR   = $(PREFIX)/share/man
COMPDIR  = $(PREFIX)/share/bash-completion/completions
NP      ?= $(shell nproc 2>/dev/null || echo 2)

# The source tree is layered: src/LAYER/*.c with its headers in
# include/ccsweep/LAYER/, lowest first. A file includes headers of its own layer
# and of the layers before it, never after (tools/check-layers.sh, run by
# 'make check'). The layers below the store need neither MPI nor SQLite: the
# fuzz harnesses link only those.
LOW_LAYERS := util model cost sweep
LAYERS     := $(LOW_LAYERS) store dist report cli

# A sanitizer build keeps its objects apart (build/san), so switching back and
# forth rebuilds nothing by mistake; ./ccsweep is relinked when the mode changes.
BUILD   := $(if $(filter 1,$(SANITIZE)),build/san,build)
MODE    := $(if $(filter 1,$(SANITIZE)),sanitize,plain)
# The build directories exist before any rule runs: build/.mode is written here,
# so an order-only "$(BUILD)" target would count as made and never create its
# subdirectories.
$(shell mkdir -p $(BUILD)/tests $(BUILD)/tools $(LAYERS:%=$(BUILD)/%); [ "`cat build/.mode 2>/dev/null`" = "$(MODE)" ] || echo "$(MODE)" > build/.mode)
PKGS    := gsl yaml-0.1 sqlite3 jansson
CPPFLAGS += -Iinclude -I$(BUILD) -D_POSIX_C_SOURCE=200809L -DCCS_DATADIR='"$(DATADIR)"' \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -Wall -Wextra -Wpedantic -MMD -MP
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lgsl -lgslcblas -lyaml -lsqlite3 -ljansson) -lm -pthread
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifeq ($(DEBUG),1)
CFLAGS  += -O0
endif
# assert() is on in every build but NDEBUG=1 (a release build, measured by
# 'make bench' side by side with the default).
ifeq ($(NDEBUG),1)
CPPFLAGS += -DNDEBUG
endif
ifeq ($(SANITIZE),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
# Open MPI keeps allocations from MPI_Init to exit on purpose: tests/lsan.supp
# names its libraries (and only them). They match only on full stacks: the
# default fast unwinder stops in Open MPI's frame-pointer-less code and leaves
# a single frame, often in an MCA component unloaded by then, hence
# fast_unwind_on_malloc=0. UBSan findings fail the program.
export ASAN_OPTIONS  ?= detect_leaks=1:abort_on_error=0:detect_odr_violation=0:fast_unwind_on_malloc=0
export LSAN_OPTIONS  ?= suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
endif

GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
CPPFLAGS += -DCCS_GIT_REV='"$(GIT_REV)"'

LIB_SRC  := $(filter-out src/cli/main.c,$(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c)))
LIB_OBJ  := $(LIB_SRC:src/%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libccsweep.a
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(wildcard tools/*.c)
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/tools/%)
FUZZERS  ?= spec catalog expr calib nccl xsum store hfconfig
REPLAY_BIN := $(FUZZERS:%=$(BUILD)/tests/replay_%)

.PHONY: all check unit integration run bench install uninstall clean deps format format-check validate study study-moe study-serve fuzz
all: ccsweep $(TOOL_BIN)

$(BUILD)/%.o: src/%.c | $(BUILD)
	@mkdir -p $(@D)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD):
	@mkdir -p $(BUILD)/tests $(BUILD)/tools

# The report's SQL is tools/queries/*.sql, compiled in.
$(BUILD)/report_queries.inc: $(wildcard tools/queries/*.sql) tools/sql2c.sh | $(BUILD)
	sh tools/sql2c.sh $(sort $(wildcard tools/queries/*.sql)) > $@.tmp && mv $@.tmp $@
$(BUILD)/report/report_sql.o: $(BUILD)/report_queries.inc

$(LIB): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

ccsweep: $(BUILD)/cli/main.o $(LIB) build/.mode
	$(MPICC) $(LDFLAGS) -o $@ $(BUILD)/cli/main.o $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LIB) | $(BUILD)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lcmocka

# The fuzz harnesses without libFuzzer: replay the seed corpora and the
# regression inputs in 'make check' (tests/integration/fuzz_replay.sh).
$(BUILD)/tests/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz_common.h $(LIB) | $(BUILD)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ tests/fuzz/replay.c $< $(LIB) $(LDLIBS)
$(BUILD)/tests/replay_nccl: tools/nccl_import.c

# OpenBLAS comes first: libgsl pulls in libgslcblas, whose cblas_* would
# otherwise bind first at run time and the tools would time the reference BLAS.
$(BUILD)/tools/%: tools/%.c $(LIB) | $(BUILD)
	$(MPICC) $(CPPFLAGS) $(shell pkg-config --cflags openblas 2>/dev/null) $(CFLAGS) $(LDFLAGS) \
	    -o $@ $< $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas) $(LIB) $(LDLIBS)
# nccl_import only parses logs: without OpenBLAS it starts no thread pool.
$(BUILD)/tools/nccl_import: tools/nccl_import.c $(LIB) | $(BUILD)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# Debian 12 packages the build, the tests and the reports need (iproute2 and
# util-linux: the namespaces, bridge and links of tests/cluster).
DEB_PKGS := build-essential pkg-config libopenmpi-dev openmpi-bin libgsl-dev libsqlite3-dev \
            sqlite3 libyaml-dev libjansson-dev libcmocka-dev libopenblas-dev gnuplot-nox \
            slurm-wlm munge iproute2 util-linux
deps:
	@sh tools/deps.sh $(DEB_PKGS)

# Like 'make run', 'make check' installs the missing packages first (as root;
# otherwise it prints the command): the README's quick start on a fresh machine.
check: deps
	@sh tools/check-layers.sh
	@$(MAKE) --no-print-directory all $(TEST_BIN) $(REPLAY_BIN)
	@CCS_BUILD=$(BUILD) sh tests/run.sh $(TEST_BIN)

unit: all $(TEST_BIN)
	@CCS_BUILD=$(BUILD) sh tests/run.sh --unit-only $(TEST_BIN)

run: deps
	@$(MAKE) --no-print-directory all
	@sh tools/run-default.sh $(NP)

bench: all
	@sh tools/bench.sh

validate: deps
	@$(MAKE) --no-print-directory all
	@sh tools/validate.sh

# The paper's study (sweeps/paper.yaml) and its report: results/paper.db,
# results/paper-report/report.md with plots (tools/study.sh).
study: deps
	@$(MAKE) --no-print-directory all
	@sh tools/study.sh $(NP)

# Mixture-of-experts and long-context models (sweeps/moe-longctx.yaml):
# results/moe-longctx.db and results/moe-longctx-report/report.md.
study-moe: deps
	@$(MAKE) --no-print-directory all
	@STUDY_SPEC=sweeps/moe-longctx.yaml sh tools/study.sh $(NP)

# The serving study (sweeps/serve.yaml, workload: serve): results/serve.db and
# results/serve-report/report.md with its serving section and plots.
study-serve: deps
	@$(MAKE) --no-print-directory all
	@STUDY_SPEC=sweeps/serve.yaml sh tools/study.sh $(NP)

# libFuzzer (Debian clang + libclang-rt-14-dev): each harness runs FUZZ_SECONDS
# from its seed corpus (tests/fuzz/corpus/NAME) and the regression inputs
# (tests/fuzz/regress/NAME); new inputs go to build/fuzz/work-NAME, crashes to
# build/fuzz/crash-NAME-*, each harness's output to build/fuzz/log-NAME.txt.
# The library is rebuilt with clang and the sanitizers (the layers below the
# store, LOW_LAYERS, and the store for fuzz_store: no MPI or report). Inputs
# are at most 8 KiB, but fuzz_store's (databases, 64 KiB). The recipe prints the
# executions of each harness and fails when one crashed, exited non-zero or
# ran fewer than FUZZ_MIN_EXECS inputs (a harness that did not fuzz).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_MIN_EXECS ?= 100
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined
FUZZ_LIBSRC  := $(foreach l,$(LOW_LAYERS) store,$(wildcard src/$(l)/*.c))
FUZZ_OBJ     := $(FUZZ_LIBSRC:src/%.c=$(BUILD)/fuzz/%.o)
.SECONDARY: $(FUZZ_OBJ)
FUZZ_BIN     := $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
$(BUILD)/fuzz/%.o: src/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) -std=c11 -MMD -MP $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(CPPFLAGS) -std=c11 -MMD -MP $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS)
$(BUILD)/fuzz/fuzz_nccl: tools/nccl_import.c
FUZZ_PKGS    := clang libclang-rt-14-dev
fuzz:
	@sh tools/deps.sh $(FUZZ_PKGS)
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@bad=; for f in $(FUZZERS); do \
	    mkdir -p $(BUILD)/fuzz/work-$$f; \
	    dict=; [ -f tests/fuzz/$$f.dict ] && dict=-dict=tests/fuzz/$$f.dict; \
	    log=$(BUILD)/fuzz/log-$$f.txt; ml=8192; [ $$f = store ] && ml=65536; \
	    echo "== fuzz_$$f for $(FUZZ_SECONDS) s"; \
	    $(BUILD)/fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	        -max_len=$$ml -print_final_stats=1 $$dict -artifact_prefix=$(BUILD)/fuzz/crash-$$f- \
	        $(BUILD)/fuzz/work-$$f tests/fuzz/corpus/$$f tests/fuzz/regress/$$f >$$log 2>&1; rc=$$?; \
	    grep -E '^(stat::peak_rss|==[0-9]+==ERROR|SUMMARY|INFO: fuzzed)' $$log; \
	    n=`sed -n 's/^stat::number_of_executed_units: *//p' $$log | tail -1`; n=$${n:-0}; \
	    echo "fuzz_$$f: $$n executions in $(FUZZ_SECONDS) s (exit $$rc)"; \
	    if [ $$rc -ne 0 ] || ls $(BUILD)/fuzz/crash-$$f-* >/dev/null 2>&1; then \
	        echo "fuzz_$$f: FAILED (exit $$rc; crash inputs in $(BUILD)/fuzz/, output in $$log)"; \
	        tail -5 $$log; bad="$$bad $$f"; \
	    elif [ $$n -lt $(FUZZ_MIN_EXECS) ]; then \
	        echo "fuzz_$$f: FAILED: $$n executions, fewer than $(FUZZ_MIN_EXECS) (output in $$log)"; \
	        tail -5 $$log; bad="$$bad $$f"; \
	    fi; \
	done; \
	if [ -n "$$bad" ]; then echo "fuzz: failed:$$bad"; exit 1; fi; echo "fuzz: no crashes"

# Installed names of the tools (build/tools/NAME -> BINDIR/ccsweep-NAME).
TOOL_INST := profiler groundtruth nccl-import
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/catalog $(DESTDIR)$(DATADIR)/sweeps \
	    $(DESTDIR)$(DATADIR)/calibration $(DESTDIR)$(DATADIR)/queries $(DESTDIR)$(DATADIR)/slurm \
	    $(DESTDIR)$(DOCDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(COMPDIR)
	install -m 755 ccsweep $(DESTDIR)$(BINDIR)/ccsweep
	install -m 755 $(BUILD)/tools/profiler $(DESTDIR)$(BINDIR)/ccsweep-profiler
	install -m 755 $(BUILD)/tools/groundtruth $(DESTDIR)$(BINDIR)/ccsweep-groundtruth
	install -m 755 $(BUILD)/tools/nccl_import $(DESTDIR)$(BINDIR)/ccsweep-nccl-import
	install -m 644 sweeps/catalog/*.yaml $(DESTDIR)$(DATADIR)/catalog/
	install -m 644 sweeps/*.yaml $(DESTDIR)$(DATADIR)/sweeps/
	install -m 644 sweeps/calibration/*.csv sweeps/calibration/*.yaml $(DESTDIR)$(DATADIR)/calibration/
	install -m 644 tools/queries/*.sql $(DESTDIR)$(DATADIR)/queries/
	install -m 644 tools/validate-configs.txt $(DESTDIR)$(DATADIR)/
	sed 's|^default_bin=ccsweep$$|default_bin=$(BINDIR)/ccsweep|' tools/slurm/ccsweep.sbatch \
	    > $(DESTDIR)$(DATADIR)/slurm/ccsweep.sbatch
	chmod 755 $(DESTDIR)$(DATADIR)/slurm/ccsweep.sbatch
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 644 sweeps/README.md $(DESTDIR)$(DOCDIR)/sweeps.md
	install -m 644 results/README.md $(DESTDIR)$(DOCDIR)/results.md
	install -m 644 tools/slurm/README.md $(DESTDIR)$(DOCDIR)/slurm.md
	install -m 644 tools/ccsweep.1 $(DESTDIR)$(MANDIR)/man1/ccsweep.1
	install -m 644 tools/ccsweep.bash-completion $(DESTDIR)$(COMPDIR)/ccsweep

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ccsweep $(TOOL_INST:%=$(DESTDIR)$(BINDIR)/ccsweep-%)
	rm -f $(DESTDIR)$(MANDIR)/man1/ccsweep.1 $(DESTDIR)$(COMPDIR)/ccsweep
	rm -rf $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR)

# The C sources as .clang-format lays them out ('/* clang-format off */' fences
# what it would misread). format rewrites them; format-check (run by .ci/run)
# lists the files that differ and fails.
FORMAT_SRC = $(shell git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'tools/*.[ch]' 2>/dev/null)
format:
	clang-format -i $(FORMAT_SRC)
format-check:
	@bad=; for f in $(FORMAT_SRC); do clang-format "$$f" | cmp -s - "$$f" || bad="$$bad $$f"; done; \
	if [ -n "$$bad" ]; then echo "format-check: not as .clang-format lays them out (make format):$$bad"; exit 1; fi; \
	echo "format-check: $(words $(FORMAT_SRC)) files as .clang-format lays them out"

clean:
	rm -rf $(BUILD) ccsweep tests/tmp

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/tests/*.d $(BUILD)/tools/*.d $(BUILD)/fuzz/*/*.d)
