# cuscan - build, test, demo, bench, install.
#   make            build/libcuscan.so, in parallel on every core (CUDA kernels when nvcc is found;
#                   CUDA=0 for the CPU backend alone; CUDA_ARCH="80 90" picks the GPUs to build for;
#                   V=1 shows the compiler's command lines)
#   make test       every spec under LuaJIT; ends with "N passed, N failed[, N skipped]"
#   make demo       the three seed problems, verified and timed
#   make bench      the performance table (CSV=path also writes CSV; GRID=1 adds the shape grid; with
#                   two GPUs or more, the multi-GPU rows of bench/multi_gpu.lua);
#                   make bench-plot draws the size sweep and the grid's heat maps
#   make repl       the interactive REPL (bin/cuscan)
#   make readme     README.md's API reference (from lua/cuscan/help.lua) and performance section
#                   (from the latest runs in bench/RESULTS.md), rewritten
#   make install PREFIX=/usr/local / make uninstall
#   make asan       the C core and the CPU specs under AddressSanitizer and UBSan
#   make sanitize   the specs under compute-sanitizer memcheck and racecheck (GPU host)

PREFIX    ?= /usr/local
LUADIR    ?= $(PREFIX)/share/lua/5.1
LIBDIR    ?= $(PREFIX)/lib
BINDIR    ?= $(PREFIX)/bin
BUILD     ?= build
CC        ?= cc
CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda) $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)))
NVCC      ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
ifeq ($(strip $(NVCC)),)
CUDA      ?= 0
else
CUDA      ?= 1
endif
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += -j$(JOBS) --no-print-directory

# The GPUs to build for: the ones present (nvidia-smi), else a default set (Ampere and Hopper); PTX of
# the newest of them lets the driver compile for a later GPU.
DEFAULT_CUDA_ARCH := 80 90
ifeq ($(CUDA),1)
ifeq ($(origin CUDA_ARCH),undefined)
GPU_ARCH  := $(sort $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '.' | grep -E '^[0-9]+$$'))
CUDA_ARCH := $(if $(GPU_ARCH),$(GPU_ARCH),$(DEFAULT_CUDA_ARCH))
endif
endif
PTX_ARCH  ?= $(lastword $(CUDA_ARCH))

comma    := ,
Q         = $(if $(V),,@)
# CFLAGS / NVFLAGS / LDFLAGS are the user's (optimisation, sanitizers); the rest is always added.
# Symbols are hidden unless src/cuscan.h declares them: the library exports its public API alone.
CFLAGS   ?= -O3
NVFLAGS  ?= -O3
C_ALL     = $(CFLAGS) -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -Wall -Wextra -Werror -fopenmp -Isrc
NV_ALL    = $(NVFLAGS) -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -Werror all-warnings -Isrc -Ikernels \
            $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
            $(if $(PTX_ARCH),-gencode arch=compute_$(PTX_ARCH)$(comma)code=compute_$(PTX_ARCH))
LDLIBS    = -fopenmp -lm -lpthread
# glibc's vector math library for the CPU backend's float32 exp and log (src/cpu/vmath.c), when it links
MVEC     := $(shell printf 'int main(void) { return 0; }' | $(CC) -x c - -lmvec -o /dev/null 2>/dev/null && echo -lmvec)
LDLIBS   += $(MVEC)

# Folders by layer: src/ the public API, plan and tensor core; src/cpu/ the CPU backend; src/cuda/
# the CUDA side's host runtime and kernels/ its device code (src/no_cuda.c stands in for both
# without CUDA). One scan compilation unit per dtype pair of src/dtypes.h, generated.
CORE_SRC = $(wildcard src/*.c src/cpu/*.c)
PAIRS    = $(shell sed -n 's/^ *X.\([a-z0-9_]*\),.*/\1/p' src/dtypes.h)
# The scan units (scan_launch.cuh's launch_unit): PART_DIR_PAIR for each part a pair's OPS bits
# allow (plain, masked and reset: sums or products; lse; maxmin) and each direction
UNITS    = $(shell sed -n 's/^ *X.\([a-z0-9_]*\),\(.*\)/\1 \2/p' src/dtypes.h | awk '{ \
             parts = ""; \
             if ($$0 ~ /CS_OPS_SUM|CS_OPS_PROD/) parts = parts " plain masked reset"; \
             if ($$0 ~ /CS_OPS_LSE/) parts = parts " lse"; \
             if ($$0 ~ /CS_OPS_MAXMIN/) parts = parts " maxmin"; \
             n = split(parts, ps, " "); \
             for (i = 1; i <= n; i++) printf "%s_fwd_%s %s_rev_%s ", ps[i], $$1, ps[i], $$1 }')
ifeq ($(CUDA),1)
OBJ      = $(BUILD)/obj-cuda
C_SRC    = $(filter-out src/no_cuda.c,$(CORE_SRC)) $(wildcard src/cuda/*.c)
CU_OBJS  = $(patsubst kernels/%.cu,$(OBJ)/kernels/%.o,$(wildcard kernels/*.cu)) $(UNITS:%=$(OBJ)/gen/%.o)
C_ALL   += -I$(CUDA_HOME)/include
LDLIBS  += -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl -lstdc++
else
OBJ      = $(BUILD)/obj-cpu
C_SRC    = $(CORE_SRC)
CU_OBJS  =
endif
C_OBJS   = $(C_SRC:src/%.c=$(OBJ)/%.o)
OBJS     = $(C_OBJS) $(CU_OBJS)
NSTEPS   = $(words $(OBJS) lib)
step     = $$(printf '%s\n' $(OBJS) | grep -nxF '$(1)' | cut -d: -f1)
# the library is relinked whenever the build it was last linked from differs from this one
LINKED   = $(BUILD)/linked-from
LINK_ID  = $(strip $(notdir $(OBJ)) $(CUDA_ARCH))
ifneq ($(shell cat $(LINKED) 2>/dev/null),$(LINK_ID))
$(shell mkdir -p $(BUILD) && echo $(LINK_ID) > $(LINKED))
endif

LIB  = $(BUILD)/libcuscan.so
CDEF = $(BUILD)/cuscan.cdef
HDRS = $(wildcard src/*.h src/cpu/*.h)
CUH  = $(wildcard kernels/*.cuh)

.DELETE_ON_ERROR:
.SECONDARY: $(UNITS:%=$(BUILD)/gen/%.cu)
.PHONY: all announce test demo bench bench-plot repl readme install uninstall asan sanitize clean tools run-specs units
all: announce $(LIB) $(CDEF)

# A first CUDA build's seconds: the units' CPU time shared by the jobs, but no less than the longest
# unit's, per architecture of CUDA_ARCH (cicc and ptxas) and for PTX (cicc alone), as measured
# (README: the CPU time of whole builds, and 64-core builds, where the longest unit is the time).
BUILD_TARGETS = $(if $(strip $(CUDA_ARCH)),sm_$(subst $() ,$(comma) sm_,$(strip $(CUDA_ARCH)))$(if $(PTX_ARCH), + PTX $(PTX_ARCH)),PTX $(PTX_ARCH) alone)
BUILD_CPU_S = $(shell echo $$(( ( 120 * $(words $(CUDA_ARCH)) + 21 * $(words $(PTX_ARCH)) ) * $(words $(CU_OBJS)) )))
BUILD_MIN_S = $(shell echo $$(( 420 * $(words $(CUDA_ARCH)) + 100 * $(words $(PTX_ARCH)) )))
BUILD_EST_S = $(shell t=$$(( ( $(BUILD_CPU_S) + $(JOBS) - 1 ) / $(JOBS) )); echo $$(( t > $(BUILD_MIN_S) ? t : $(BUILD_MIN_S) )))

announce:
ifeq ($(CUDA),1)
	@if [ ! -f $(LIB) ] || [ -n "$$(find kernels src/dtypes.h -newer $(LIB) 2>/dev/null | head -1)" ]; then \
	  echo "cuscan: building with CUDA kernels for $(BUILD_TARGETS) on $(JOBS) cores;" \
	       "a first build takes about $$(( ( $(BUILD_EST_S) + 59 ) / 60 )) min here"; \
	fi
else
	@echo "cuscan: building the CPU backend alone ($(if $(NVCC),CUDA=0 given,no nvcc found)); CUDA specs will be skipped"
endif

$(OBJ)/cpu/vmath.o: C_ALL += -fno-math-errno $(if $(MVEC),-DCS_HAVE_MVEC)

$(OBJ)/%.o: src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	@echo "[$(call step,$@)/$(NSTEPS)] C $<"
	$(Q)$(CC) $(C_ALL) -c $< -o $@

$(OBJ)/kernels/%.o: kernels/%.cu $(CUH) $(HDRS)
	@mkdir -p $(dir $@)
	@echo "[$(call step,$@)/$(NSTEPS)] CUDA $<"
	$(Q)$(NVCC) $(NV_ALL) -c $< -o $@

# the scan units of each dtype pair (src/dtypes.h; UNITS above): unit PART_DIR_PAIR defines
# scan_launch.cuh's entry point for that part and direction, so the pairs and their parts compile in
# parallel
unit_part = $(word 1,$(subst _, ,$(1)))
unit_dir  = $(word 2,$(subst _, ,$(1)))
unit_pair = $(patsubst $(call unit_part,$(1))_$(call unit_dir,$(1))_%,%,$(1))
$(BUILD)/gen/%.cu: src/dtypes.h
	@mkdir -p $(dir $@)
	@{ printf '// generated from src/dtypes.h: the $(call unit_part,$*) scan kernels of one dtype pair, $(call unit_dir,$*)\n#include "scan_launch.cuh"\n'; \
	   sed -n 's/^ *X(\($(call unit_pair,$*),[^)]*\)).*/CUSCAN_DEFINE_UNIT($(call unit_part,$*), $(call unit_dir,$*), \1)/p' src/dtypes.h; } > $@

$(OBJ)/gen/%.o: $(BUILD)/gen/%.cu $(CUH) $(HDRS)
	@mkdir -p $(dir $@)
	@echo "[$(call step,$@)/$(NSTEPS)] CUDA $(call unit_part,$*) scan kernels $(call unit_pair,$*) ($(call unit_dir,$*))"
	$(Q)$(NVCC) $(NV_ALL) -c $< -o $@

# the scan units' names, one a line (spec/dispatch_spec.lua checks the dispatcher against them)
units:
	@printf '%s\n' $(UNITS)

$(LIB): $(OBJS) $(LINKED)
	@echo "[$(NSTEPS)/$(NSTEPS)] link $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $(OBJS) $(LDLIBS) -Wl,-z,defs -Wl,-z,nodelete -Wl,--exclude-libs,ALL

# the header as LuaJIT's ffi.cdef reads it: no preprocessor lines, no C++ guards
$(CDEF): src/cuscan.h
	@mkdir -p $(dir $@)
	$(Q)sed -e '/^#/d' -e '/^extern "C"/d' -e '/^}$$/d' $< > $@

# ---- Lua tools: install the Debian packages when root, else say how ----
LUAJIT ?= $(shell command -v luajit 2>/dev/null)
BUSTED ?= $(shell command -v busted 2>/dev/null)
tools:
	@if [ -z "$(LUAJIT)" ] || [ -z "$(BUSTED)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "cuscan: installing luajit and busted (Debian packages)"; \
	    (apt-get install -y -qq luajit libluajit-5.1-dev lua-busted >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq luajit libluajit-5.1-dev lua-busted >/dev/null)) || exit 1; \
	  else \
	    echo "cuscan: luajit and busted are needed; run:  sudo apt-get install -y luajit libluajit-5.1-dev lua-busted"; exit 1; \
	  fi; \
	fi

# (with BUILD elsewhere, the Lua module is pointed at that build's library: it looks in build/)
LUA_ENV = LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;$$LUA_PATH;;" \
          $(if $(filter build,$(BUILD)),,CUSCAN_LIB="$(abspath $(LIB))")

test: all tools
	@$(LUA_ENV) $(MAKE) run-specs

run-specs:
	@luajit $$(command -v busted) --output=spec/support/summary.lua $(SPEC_ARGS) spec examples/spec

demo: all tools
	@$(LUA_ENV) luajit examples/demo.lua

bench: all tools
	@$(LUA_ENV) luajit bench/bench.lua $(if $(CSV),--csv $(CSV))
	@$(LUA_ENV) luajit bench/multi_gpu.lua
	@$(if $(GRID),$(LUA_ENV) luajit bench/grid.lua --csv bench/grid.csv,true)

# GB/s against size for each op with the copy line: bench/sweep.png (gnuplot), else bench/sweep.csv;
# the shape grid's heat maps from bench/grid.csv when a grid run wrote it
bench-plot: all tools
	@bin/cuscan examples/bench_sweep.lua --out bench/sweep
	@if [ -f bench/grid.csv ]; then $(LUA_ENV) luajit bench/grid_plot.lua bench/grid.csv bench/grid; fi

repl: all tools
	@bin/cuscan

README_MD ?= README.md
readme: tools
	@$(LUA_ENV) luajit -e 'require("cuscan.help").write_readme("$(README_MD)")'
	@luajit bench/readme_perf.lua bench/RESULTS.md $(README_MD)

install: all
	install -d $(DESTDIR)$(LIBDIR)/cuscan $(DESTDIR)$(LUADIR)/cuscan $(DESTDIR)$(BINDIR)
	install -m 755 $(LIB) $(DESTDIR)$(LIBDIR)/cuscan/libcuscan.so
	install -m 644 $(CDEF) $(DESTDIR)$(LIBDIR)/cuscan/cuscan.cdef
	install -m 644 lua/cuscan/*.lua $(DESTDIR)$(LUADIR)/cuscan/
	sed -e 's|^CUSCAN_INSTALLED_PREFIX=.*|CUSCAN_INSTALLED_PREFIX="$(PREFIX)"|' bin/cuscan > $(DESTDIR)$(BINDIR)/cuscan
	chmod 755 $(DESTDIR)$(BINDIR)/cuscan

parent = $(patsubst %/,%,$(dir $(1)))
uninstall:
	rm -rf $(DESTDIR)$(LIBDIR)/cuscan $(DESTDIR)$(LUADIR)/cuscan $(DESTDIR)$(BINDIR)/cuscan
	@# and the folders install made, where nothing else is left in them
	@rmdir --ignore-fail-on-non-empty $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(LUADIR) \
	  $(DESTDIR)$(call parent,$(LUADIR)) $(DESTDIR)$(call parent,$(call parent,$(LUADIR))) 2>/dev/null || true

asan: tools
	$(MAKE) BUILD=build/asan CUDA=0 CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" all
	@$(LUA_ENV) CUSCAN_LIB=$(CURDIR)/build/asan/libcuscan.so CUSCAN_DEVICE=cpu \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 $(MAKE) -j1 run-specs

sanitize: all tools
	@$(LUA_ENV) LOGS=$(BUILD)/sanitize JOBS=$(JOBS) sh spec/support/sanitize.sh

clean:
	rm -rf $(BUILD)
