# cuscan - build, test, demo, bench, install.
#   make            build/libcuscan.so (CUDA kernels when nvcc is found; CUDA=0 for the CPU backend alone)
#   make test       every spec under LuaJIT; ends with "N passed, N failed[, N skipped]"
#   make demo       the three seed problems, verified and timed
#   make bench      the performance table (CSV=path also writes CSV); make bench-plot draws it
#   make repl       the interactive REPL (bin/cuscan)
#   make readme     README.md's API reference section, rewritten from lua/cuscan/help.lua
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
CUDA_ARCH ?= 80 90
PTX_ARCH  ?= $(lastword $(CUDA_ARCH))
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)

comma    := ,
# CFLAGS / NVFLAGS / LDFLAGS are the user's (optimisation, sanitizers); the rest is always added
CFLAGS   ?= -O3
NVFLAGS  ?= -O3
C_ALL     = $(CFLAGS) -std=c11 -D_GNU_SOURCE -fPIC -Wall -Wextra -Werror -fopenmp -Isrc -DCS_WITH_CUDA=$(CUDA)
NV_ALL    = $(NVFLAGS) -std=c++17 -Xcompiler -fPIC,-Wall,-Wextra -Werror all-warnings -Isrc -DCS_WITH_CUDA=1 \
            $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
            $(if $(PTX_ARCH),-gencode arch=compute_$(PTX_ARCH)$(comma)code=compute_$(PTX_ARCH))
LDLIBS    = -fopenmp -lm -lpthread

C_SRC  = $(filter-out src/cuda_stub.c,$(wildcard src/*.c))
CU_SRC = $(wildcard kernels/*.cu)
# objects of the CPU-only and the CUDA build live apart (C files compile differently in each), and
# the library is relinked whenever the build it was last linked from differs from this one
ifeq ($(CUDA),1)
OBJ     = $(BUILD)/obj-cuda
OBJS    = $(C_SRC:src/%.c=$(OBJ)/%.o) $(CU_SRC:kernels/%.cu=$(OBJ)/kernels/%.o)
C_ALL  += -I$(CUDA_HOME)/include
LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl -lstdc++
else
OBJ     = $(BUILD)/obj-cpu
OBJS    = $(C_SRC:src/%.c=$(OBJ)/%.o) $(OBJ)/cuda_stub.o
endif
LINKED  = $(BUILD)/linked-from
ifneq ($(shell cat $(LINKED) 2>/dev/null),$(notdir $(OBJ)))
$(shell mkdir -p $(BUILD) && echo $(notdir $(OBJ)) > $(LINKED))
endif

LIB  = $(BUILD)/libcuscan.so
CDEF = $(BUILD)/cuscan.cdef

.DELETE_ON_ERROR:
.PHONY: all test demo bench bench-plot repl readme install uninstall asan sanitize clean tools
all: $(LIB) $(CDEF)
ifeq ($(CUDA),1)
	@true
else
	@echo "cuscan: building the CPU backend alone ($(if $(NVCC),CUDA=0 given,no nvcc found)); CUDA specs will be skipped"
endif

$(OBJ)/%.o: src/%.c src/cuscan.h src/internal.h src/scalar.h | $(OBJ)
	$(CC) $(C_ALL) -c $< -o $@

$(OBJ)/kernels/%.o: kernels/%.cu $(wildcard kernels/*.cuh) src/cuscan.h src/internal.h src/scalar.h | $(OBJ)/kernels
	$(NVCC) $(NV_ALL) -c $< -o $@

$(OBJ) $(OBJ)/kernels:
	@mkdir -p $@

# -z nodelete: LuaJIT unloads the library at exit while OpenMP's threads may still be running
$(LIB): $(OBJS) $(LINKED)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $(OBJS) $(LDLIBS) -Wl,-z,defs -Wl,-z,nodelete

# the header as LuaJIT's ffi.cdef reads it: no preprocessor lines, no C++ guards
$(CDEF): src/cuscan.h | $(OBJ)
	sed -e '/^#/d' -e '/^extern "C"/d' -e '/^}$$/d' $< > $@

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

LUA_ENV = LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;$$LUA_PATH;;"

test: all tools
	@$(LUA_ENV) $(MAKE) --no-print-directory run-specs

run-specs:
	@luajit $$(command -v busted) --output=spec/support/summary.lua $(SPEC_ARGS) spec examples/spec

demo: all tools
	@$(LUA_ENV) luajit examples/demo.lua

bench: all tools
	@$(LUA_ENV) luajit bench/bench.lua $(if $(CSV),--csv $(CSV))

# GB/s against size for each op with the copy line: bench/sweep.png (gnuplot), else bench/sweep.csv
bench-plot: all tools
	@bin/cuscan examples/bench_sweep.lua --out bench/sweep

repl: all tools
	@bin/cuscan

README_MD ?= README.md
readme: tools
	@$(LUA_ENV) luajit -e 'require("cuscan.help").write_readme("$(README_MD)")'

install: all
	install -d $(DESTDIR)$(LIBDIR)/cuscan $(DESTDIR)$(LUADIR)/cuscan $(DESTDIR)$(BINDIR)
	install -m 755 $(LIB) $(DESTDIR)$(LIBDIR)/cuscan/libcuscan.so
	install -m 644 $(CDEF) $(DESTDIR)$(LIBDIR)/cuscan/cuscan.cdef
	install -m 644 lua/cuscan/*.lua $(DESTDIR)$(LUADIR)/cuscan/
	sed -e 's|^CUSCAN_INSTALLED_PREFIX=.*|CUSCAN_INSTALLED_PREFIX="$(PREFIX)"|' bin/cuscan > $(DESTDIR)$(BINDIR)/cuscan
	chmod 755 $(DESTDIR)$(BINDIR)/cuscan

uninstall:
	rm -rf $(DESTDIR)$(LIBDIR)/cuscan $(DESTDIR)$(LUADIR)/cuscan $(DESTDIR)$(BINDIR)/cuscan

asan: tools
	$(MAKE) --no-print-directory BUILD=build/asan CUDA=0 CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" all
	@$(LUA_ENV) CUSCAN_LIB=$(CURDIR)/build/asan/libcuscan.so CUSCAN_DEVICE=cpu \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 $(MAKE) --no-print-directory run-specs

sanitize: all tools
	@$(LUA_ENV) LOGS=$(BUILD)/sanitize JOBS=$(JOBS) sh spec/support/sanitize.sh

clean:
	rm -rf $(BUILD)
