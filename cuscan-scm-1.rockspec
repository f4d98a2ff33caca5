-- LuaRocks package of cuscan, built from a checkout of the repository:
--
--     sudo apt-get install -y luarocks lua5.1 liblua5.1-0-dev luajit libluajit-5.1-dev
--     luarocks make cuscan-scm-1.rockspec            (add --local or --tree DIR as usual)
--
-- Debian's luarocks runs under the first Lua it finds installed (lua5.1 before lua5.2) and builds
-- for that version; lua5.1 makes it Lua 5.1, LuaJIT's (else add --lua-version=5.1).
-- It runs the project's Makefile: `make all` builds build/libcuscan.so (with the CUDA kernels when
-- nvcc is found; CUDA=0 in the environment builds the CPU backend alone), then `make install`
-- with LuaRocks' directories: the Lua modules go to LUADIR/cuscan/ (the tree's share/lua/5.1),
-- libcuscan.so and cuscan.cdef to LIBDIR/cuscan/ (the tree's lib/lua/5.1, where the module finds
-- the library on package.cpath) and bin/cuscan to BINDIR (LuaRocks puts a wrapper for it on the
-- tree's bin directory). `require("cuscan")` then works from any LuaJIT that uses the tree, and
-- `luarocks remove cuscan` takes everything away.
rockspec_format = "3.0"
package = "cuscan"
version = "scm-1"

source = {
  url = "git+file://.",
}

description = {
  summary = "Cumulative sums and products along any dim of CUDA and CPU tensors, from LuaJIT",
  detailed = [[
    cuscan keeps n-dimensional tensors in CUDA device memory or host memory and runs cumulative
    sums and products (reverse, exclusive, masked, segmented), cummax, cummin and logcumsumexp
    along any dim, deterministically, with a LuaJIT FFI module, a REPL and busted assertions for
    checking results. Needs LuaJIT (the FFI)
    and, for the GPU, the CUDA toolkit's nvcc at build time.
  ]],
}

dependencies = {
  "lua == 5.1",
}

build = {
  type = "make",
  build_target = "all",
  install_target = "install",
  install_variables = {
    PREFIX = "$(PREFIX)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
  },
  copy_directories = { "examples" },
}

-- bin/cuscan is a shell script that starts LuaJIT (it is a Lua chunk too, which LuaRocks would
-- otherwise wrap to run under its own Lua 5.1 interpreter): installed as it is, it finds the
-- modules beside it in the tree.
deploy = {
  wrap_bin_scripts = false,
}
