-- cuscan.help: the API reference: a signature, a description and the errors of every public
-- function and method of the module and of the REPL's helpers. The same entries give help() in
-- the REPL, the lists of help(cs) and help(x), the option names the REPL completes, and the API
-- reference section of README.md (`make readme` writes it; spec/readme_spec.lua checks it).
local format, concat = string.format, table.concat

local ENTRIES = {
  -- group, names (the first is the entry's key; the rest are the forms it also documents),
  -- signature, description, errors
  { "Devices", { "cs.cuda_available" }, "cs.cuda_available()",
    [[true when the library was built with CUDA and a device is usable, else false.]] },
  { "Devices", { "cs.cuda_unavailable_reason" }, "cs.cuda_unavailable_reason()",
    [[Why CUDA cannot be used: "no CUDA device found" on a machine without a GPU (followed by
      "(built without CUDA)" in a build without CUDA), the CUDA runtime's message where a GPU is
      there but cannot be used; the empty string when it can.]] },
  { "Devices", { "cs.device_count" }, "cs.device_count()",
    [[The number of GPUs cuscan can use (0 without CUDA). Wherever a device is named, "cpu",
      "cuda" (the current default GPU) and "cuda:N" (GPU N, counted from 0 as CUDA and PyTorch
      count) are accepted. A tensor stays on the GPU it was made on and every op on it runs
      there; operands of one op must share a device.]] },
  { "Devices", { "cs.default_device" }, "cs.default_device()",
    [[The device new tensors go to when no device is named: "cuda" when a device is usable, else
      "cpu"; the environment variable CUSCAN_DEVICE ("cpu", "cuda" or "cuda:N") sets it at load
      time. "cuda" means the current default GPU (cs.default_gpu()).]],
    [[An unknown CUSCAN_DEVICE, or CUSCAN_DEVICE=cuda without a usable device, is an error when
      the module is loaded.]] },
  { "Devices", { "cs.default_gpu" }, "cs.default_gpu()",
    [[The index of the current default GPU, the one "cuda" names (0 at first; nil without CUDA).]] },
  { "Devices", { "cs.set_default_device" }, "cs.set_default_device(device)",
    [[Makes device ("cpu", "cuda" or "cuda:N") the default for constructors and timing events that
      name none; "cuda:N" also makes GPU N the one "cuda" names.]],
    [[device is not "cpu", "cuda" or "cuda:N"; "cuda:N" beyond the GPUs there are (the message
      says how many); "cuda" without a usable device.]] },
  { "Devices", { "cs.device_info" }, "cs.device_info([device])",
    [[A table describing a GPU (the default GPU unless named: "cuda" or "cuda:N"): index, name,
      total_memory and memory in bytes, compute_capability such as "9.0", major, minor,
      multiprocessors, l2_cache_bytes, driver_version, runtime_version; nil when there is no
      usable device.]],
    [[device is "cpu" or not a device name.]] },
  { "Devices", { "cs.memory_info" }, "cs.memory_info([device])",
    [[{in_use, free, total, device}: bytes cuscan holds in live tensors on the device (the default
      device unless named), and the device's free and total memory (the host's on the CPU).]],
    [[device is not "cpu" or "cuda", or "cuda" without a usable device.]] },
  { "Devices", { "cs.memory_trim" }, "cs.memory_trim([device])",
    [[Hands back memory cuscan keeps cached for reuse on the device (the default device unless
      named): on CUDA the memory pool's free blocks, after queued work finishes, so other processes
      can have them; on the CPU the freed host blocks of 8 MiB and more that are kept for the next
      tensor of about the same size (so a loop reuses pages the kernel has already mapped).]],
    [[device is not "cpu" or "cuda", or "cuda" without a usable device.]] },
  { "Devices", { "cs.synchronize" }, "cs.synchronize([device])",
    [[Waits until all CUDA work queued on a GPU (the default GPU unless named) has finished (CUDA ops
      return before the device finishes them).
      An asynchronous device fault is reported here. Nothing to wait for on the CPU.]],
    [[A CUDA fault, with the runtime's message.]] },

  { "Constructors", { "cs.tensor" }, "cs.tensor(data[, opts])",
    [[A new tensor from a nested Lua table of numbers or booleans (booleans give a bool tensor,
      numbers float32 unless opts.dtype names another dtype), from a number (a 0-d tensor), or a
      copy of a tensor. opts = {dtype=, device=}; the device defaults to cs.default_device().
      Integer dtypes truncate fractions toward zero.]],
    [[data is nil or not numeric; a ragged table (the message names the place); mixed numbers and
      booleans; more than 8 levels; a value out of range for an integer dtype; an unknown option,
      dtype or device.]] },
  { "Constructors", { "cs.zeros" }, "cs.zeros(shape[, opts])",
    [[A new tensor of zeros. shape is a table of sizes such as {32768, 32768} (up to 8 dims; {} is a
      0-d tensor); opts = {dtype=, device=}, float32 on the default device by default. With
      opts.devices (a list such as {"cuda:0", "cuda:1"}) and opts.shard_dim (1 by default) the
      tensor is made sharded, each shard on its device, without a full tensor first (as are
      cs.ones, cs.full, cs.empty, cs.rand, cs.randn and, for shard_dim 1, cs.arange).]],
    [[Negative or fractional sizes, a size beyond int64, more than 8 dims, sizes whose product (of
      those other than 0) overflows int64, not enough memory (the message gives the bytes asked for
      and free).]] },
  { "Constructors", { "cs.ones" }, "cs.ones(shape[, opts])",
    [[A new tensor of ones; shape and opts as for cs.zeros.]],
    [[As for cs.zeros.]] },
  { "Constructors", { "cs.full" }, "cs.full(shape, value[, opts])",
    [[A new tensor with every element value (a number or boolean); float32 for a number and bool for
      a boolean unless opts.dtype says otherwise.]],
    [[value is not a number or boolean, or does not fit an integer dtype (NaN, inf, or beyond its
      range; fractions are truncated toward zero); shape errors as for cs.zeros.]] },
  { "Constructors", { "cs.rand" }, "cs.rand(shape[, opts])",
    [[Uniform random numbers in [0, 1). opts = {seed=, dtype=, device=}: with a seed the same
      values on either device (a counter-based generator over the elements in row-major order);
      without one the next seed of the module's generator (see cs.manual_seed), so a script draws
      the same numbers on every run. A float dtype: float32 (24 random bits), float64 (53), float16
      (11) or bfloat16 (8), so that every value is exact in the dtype and below 1. With
      opts.devices (sharded), each shard draws from its own stream, the seed mixed with the shard's
      index: the values differ from the unsharded cs.rand of that seed.]],
    [[dtype other than a float dtype; a seed that is not a non-negative integer; shape errors as for
      cs.zeros.]] },
  { "Constructors", { "cs.randn" }, "cs.randn(shape[, opts])",
    [[Standard normal random numbers (mean 0, variance 1) by the Box-Muller transform of the
      counter-based generator of cs.rand, on a stream of its own. opts = {seed=, dtype=, device=}
      as for cs.rand: with a seed the same values on either device (up to the rounding of the
      device's log and cos); without one the next seed of the module's generator. A float dtype
      (float16 and bfloat16 round the float64 value).]],
    [[As for cs.rand.]] },
  { "Constructors", { "cs.empty" }, "cs.empty(shape[, opts])",
    [[A new tensor whose elements are not set (they hold whatever the memory held); shape and opts
      as for cs.zeros. For outputs that are written in full before they are read.]],
    [[As for cs.zeros.]] },
  { "Constructors", { "cs.manual_seed" }, "cs.manual_seed(n)",
    [[Restarts the module's random generator at seed n, so the unseeded cs.rand calls that follow
      repeat.]],
    [[n is not a non-negative integer.]] },
  { "Constructors", { "cs.arange" }, "cs.arange(n[, opts]) / cs.arange(start, stop[, step][, opts])",
    [[0, 1, ..., n-1 as numpy and torch give, or start, start+step, ... up to but not including
      stop. float32 unless opts.dtype names another dtype.]],
    [[Non-finite bounds, step 0, fractional bounds for an integer dtype, elements or a step beyond
      an integer dtype's range.]] },

  { "Scans", { "cs.cumsum", "x:cumsum" }, "cs.cumsum(x, dim[, opts]) / x:cumsum(dim[, opts])",
    [[The cumulative sum of x along dim (1-based; negative counts from the end, -1 is the last dim).
      opts = {reverse=false, exclusive=false, mask=nil, reset=nil, segments=nil, initial=nil,
      out=nil, dtype=nil}. reverse scans from the end of the dim toward its start in one pass; exclusive
      gives each element the sum of the elements strictly before it (after it when reversed), the
      first getting 0; mask is a bool tensor of x's shape and device, and elements under false
      contribute 0 (a NaN or Inf there never reaches the result); reset is a bool tensor of x's
      shape and device that makes the scan restart at every element where it is true (a segmented
      scan: that element is the first of a new segment in the scan's direction, so a reverse scan
      restarts where reset is true reading from the end); segments is an int32 or int64 tensor of
      segment ids of x's shape, each run of equal ids along dim a segment whatever the direction
      (the reset cs.segment_ids_to_reset gives, built first as a temporary that passing reset
      avoids); initial is the value each line starts from (a carry-in: out[1] = initial + x[1]; an
      exclusive scan gives it first), a number for every line or a tensor of x's shape with dim's
      size 1 or without dim, on x's device, read in float64 (float scans) or int64 (the others;
      integers and bool only), feeding the first segment only (every true reset, one at the first
      element too, restarts from 0); out is an existing tensor to write (out = x scans in place); dtype is the output
      dtype (float16 or bfloat16 to float32 or float64, float32 to float64, int32 or bool to
      int64). Without dtype the output has x's dtype (int64 for bool). Floats accumulate in float64
      on both devices and each output is rounded once (float32, float16 and bfloat16 outputs within
      1 ulp of the true prefix); -0.0 is the identity of float sums, so a sum of -0.0 is -0.0.
      Integer sums wrap around on overflow (accumulate in int64 with dtype). The result is
      bit-identical from run to run.]],
    [[dim out of range, zero or fractional; a mask or reset of another shape, dtype or device;
      segments that are not int32 or int64 of x's shape and device; both reset and segments; out of
      another shape, dtype or device, an expanded view (x:expand), out overlapping x other than
      being x itself, or out overlapping mask, reset or initial; initial of another shape or
      device, a float initial for an integer scan; an unsupported dtype pair; an unknown option;
      not enough memory.]] },
  { "Scans", { "cs.cumprod", "x:cumprod" }, "cs.cumprod(x, dim[, opts]) / x:cumprod(dim[, opts])",
    [[The cumulative product of x along dim, with the options of cs.cumsum; the identity is 1
      (masked-out elements contribute 1, an exclusive scan starts from 1; initial multiplies in
      first). Integer products wrap around on overflow.]],
    [[As for cs.cumsum; bool tensors (and a bool initial) are an error (convert first, e.g.
      x:to("int64")).]] },
  { "Scans", { "cs.cummax", "x:cummax" }, "cs.cummax(x, dim[, opts]) / x:cummax(dim[, opts])",
    [[The running maximum of x along dim and where it was found: returns two tensors, the values
      (x's dtype: every dtype, bool too) and their 1-based int64 indices along dim (local v, i =
      x:cummax(2)). Ties take the element met last in the scan's order (the larger index, the
      smaller when reversed), as PyTorch's cummax does; a NaN is the maximum from where it appears
      and every later NaN takes over, its index kept; -0.0 and +0.0 tie. opts = {reverse=false,
      exclusive=false, mask=nil, reset=nil, segments=nil, out=nil}: reverse, exclusive, reset and
      segments as for cs.cumsum; masked-out elements are skipped; out = {values, indices} writes
      into two existing tensors (values of x's dtype, out[1] = x scans in place; int64 indices).
      Where no element has been taken yet (an exclusive scan's first element of each segment,
      masked-out elements before the first kept one) the value is the identity, -inf for floats,
      the dtype's lowest value for integers and false for bool, and the index is 0.]],
    [[As for cs.cumsum (no dtype option); out not a table of two tensors, indices not int64 or
      overlapping x, the values, mask or reset; initial (a carried value has no index to give).]] },
  { "Scans", { "cs.cummin", "x:cummin" }, "cs.cummin(x, dim[, opts]) / x:cummin(dim[, opts])",
    [[The running minimum of x along dim and its 1-based int64 indices, as cs.cummax with the order
      reversed: ties take the element met last, NaN takes over, and the identity is +inf for
      floats, the dtype's highest value for integers and true for bool.]],
    [[As for cs.cummax.]] },
  { "Scans", { "cs.logcumsumexp", "x:logcumsumexp" },
    "cs.logcumsumexp(x, dim[, opts]) / x:logcumsumexp(dim[, opts])",
    [[log(cumsum(exp(x))) along dim without its overflow: a running log-sum-exp accumulated in
      float64 (a sum of exp(x - R) from a reference R no lower than the values it takes in, on the
      GPU with the sum's power of two kept apart where partial sums join), so inputs near the
      dtype's maximum give finite results. Float dtypes only; opts as for cs.cumsum (dtype: float16 or bfloat16 to
      float32 or float64, float32 to float64). -inf is the identity: an all -inf prefix, a
      masked-out element (skipped) and an exclusive scan's empty prefix give -inf; NaN propagates;
      +inf gives +inf. initial is a log-sum-exp carried in (-inf starts afresh). float32 results
      are within 1e-6 relative of a float64 reference.]],
    [[As for cs.cumsum; an integer or bool x (convert first, e.g. x:to("float32")).]] },
  { "Scans", { "cs.segment_ids_to_reset" }, "cs.segment_ids_to_reset(ids, dim[, opts])",
    [[The reset tensor of a segmented scan from segment ids: a new bool tensor of ids' shape, true
      at the first element of each run of equal ids along dim (1-based) met in the scan's
      direction: the element after a change of id, and each line's first element. opts =
      {reverse=false}: reverse = true gives the reset a reverse scan needs (true at the last
      element of each run). x:cumsum(dim, {segments = ids}) builds it for you.]],
    [[ids not an int32 or int64 tensor; dim out of range; an unknown option.]] },
  { "Scans", { "cs.explain" }, "cs.explain(x, dim[, opts])",
    [[The plan a scan with these arguments would run, as one line of text, without running it: the
      device, the kernel family and mode, the layout {outer, len, inner}, tile and grid. opts are
      the op's, plus op = "cumsum" (the default), "cumprod", "cummax", "cummin" or
      "logcumsumexp"; for cummax and cummin without out, the plan writes values and indices.
      Lines of one element scanned unmasked and inclusive by cumsum, cumprod or logcumsumexp are
      a copy ("copy: ..."): each element is its own scan. CUSCAN_LOG=plan prints the same line for
      every scan as it runs.]],
    [[As for the op's scan; an unknown op.]] },
  { "Scans", { "cs.force_family" }, "cs.force_family(name)",
    [[For tests and diagnosis: CUDA scans use the named kernel family (and mode) wherever it can
      handle the call: "rows" (rows/segmented, rows/single, rows/lines, rows/pieces, rows/warps),
      "columns" (columns/lookback, columns/walk) or "slabs" (slabs/whole, slabs/walk,
      slabs/lookback), as the environment variable CUSCAN_FORCE_FAMILY does; nil gives the choice
      back to the planner. rows/warps (a warp walks each line) serves cummax, cummin,
      logcumsumexp and segmented scans; plain cumsum and cumprod forced there walk whole lines by
      blocks (rows/lines). Results are the same whichever family runs.]],
    [[An unknown name.]] },
  { "Scans", { "x:reverse_cumsum" }, "x:reverse_cumsum(dim[, opts])",
    [[x:cumsum(dim, {reverse = true}): the sum from each element to the end of the dim, equal to
      flipping, scanning and flipping back, in one pass. Other cumsum options may be given.]],
    [[As for cs.cumsum; reverse = false.]] },
  { "Scans", { "x:masked_cumsum" }, "x:masked_cumsum(mask, dim[, opts])",
    [[x:cumsum(dim, {mask = mask}): the cumulative sum where elements under a false mask count as
      0. Unlike cumsum(x * mask), an Inf or NaN under a false mask does not turn the result into
      NaN.]],
    [[mask is not a bool tensor of x's shape and device; a mask option besides it; the errors of
      cs.cumsum.]] },

  { "Sharded tensors", { "cs.shard" }, "cs.shard(x, dim, devices)",
    [[x split along dim over the devices (a list such as {"cuda:0", "cuda:1"}; "cpu" entries, which
      may repeat, are CPU stand-ins that run the same logic), as a sharded tensor: copies, x is
      left as it is. Shard sizes as numpy.array_split and torch.tensor_split: the first n % k
      shards one larger, shards of size 0 when there are more devices than elements. A sharded
      tensor s answers s:shape(), s:size([d]), s:dim(), s:numel(), s.dtype, s.ndim, s.shard_dim,
      s.devices, s:shard_sizes(), s:shards() (its plain tensors), s:gather([device]) (one plain
      tensor, on the CPU by default), s:totable(), tostring(s); cs.allclose and the assertions
      take it (gathered); element-wise ops (add, sub, mul, div, pow, maximum, minimum, the
      comparisons, logical_and, logical_or, exp, log, sqrt, abs, neg, logical_not, to(dtype), + - *
      /) run shard by shard with an operand sharded the same way or a number; cs.cumsum,
      cs.cumprod, cs.logcumsumexp, cs.cummax, cs.cummin, reverse_cumsum and masked_cumsum take it
      along any dim with their options (mask, reset and segments sharded the same way or plain
      tensors of x's shape; out a sharded tensor). Along a dim that is not sharded each shard is
      scanned where it lives; along the sharded dim, each shard's per-line totals (in float64 for
      floats, masked-out elements as the identity) are all-gathered (NCCL between GPUs) and each
      shard is scanned from the fold of the totals before it, folded in float64 in shard order
      (from the last shard for reverse).]],
    [[x is not a tensor or is 0-d; dim out of range; devices not a non-empty list of "cpu",
      "cuda" or "cuda:N" names of present devices. On sharded tensors: operands sharded another way
      (other dim, sizes or devices); a plain tensor operand of an element-wise op; cummax, cummin,
      reset and segments along the sharded dim ("not supported on sharded tensors yet").]] },
  { "Sharded tensors", { "cs.shard_local" }, "cs.shard_local(t, dim[, dist])",
    [[In the multi-process mode (bin/cuscan --nproc N, or mpirun), the sharded tensor whose shard in
      this process is t, the ranks' shards in rank order along dim (sizes along dim may differ).
      Every rank must call it, and then the same ops in the same order: a scan along the sharded
      dim all-gathers the totals through the process's communicator, s:gather() all-gathers the
      shards. Printing shows this rank's shard.]],
    [[Not in the multi-process mode; a 0-d t; dim out of range; shards that differ other than
      along dim.]] },
  { "Sharded tensors", { "cs.shard_sizes" }, "cs.shard_sizes(n, parts)",
    [[The sizes of n elements split in parts as cs.shard splits them (numpy.array_split's rule).]],
    [[n not a non-negative integer; parts not a positive integer.]] },
  { "Sharded tensors", { "cs.is_sharded" }, "cs.is_sharded(v)",
    [[true when v is a sharded tensor.]] },
  { "Sharded tensors", { "cs.distributed" }, "cs.distributed()",
    [[In the multi-process mode, {rank, world_size, local_rank, device, comm, rendezvous}: the rank
      and sizes come from CUSCAN_RANK, CUSCAN_WORLD_SIZE and CUSCAN_LOCAL_RANK (bin/cuscan --nproc
      sets them), else from mpirun's OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK or PMI_RANK /
      PMI_SIZE; the device is CUSCAN_DEVICE, else cuda:<local rank>. The first call meets the other
      processes in the directory CUSCAN_RENDEZVOUS (rank 0 writes the NCCL id there; the others
      wait up to CUSCAN_RENDEZVOUS_TIMEOUT seconds, 120 by default). With CPU stand-ins
      (CUSCAN_DEVICE=cpu) the communicator exchanges through files of that directory (for tests and
      CPU runs). nil when the process was not started as one of many.]],
    [[A rank variable that is not an integer in range; CUSCAN_RENDEZVOUS not set; a rank that does
      not appear in time.]] },

  { "Queries", { "x:shape" }, "x:shape()",
    [[A fresh table of x's sizes, such as {2, 3}; {} for a 0-d tensor.]] },
  { "Queries", { "x:size" }, "x:size([d])",
    [[The size of dim d (1-based, negative from the end); without d, the shape table.]],
    [[d out of range.]] },
  { "Queries", { "x:stride" }, "x:stride([d])",
    [[The stride of dim d in elements; without d, a table of all strides.]],
    [[d out of range.]] },
  { "Queries", { "x:dim" }, "x:dim()", [[The number of dims (0 for a 0-d tensor).]] },
  { "Queries", { "x:numel" }, "x:numel()", [[The number of elements.]] },
  { "Queries", { "x.dtype" }, "x.dtype",
    [[The dtype name: "float32", "float64", "float16", "bfloat16", "int32", "int64" or "bool".
      Read-only, as is x.device.]] },
  { "Queries", { "x.device", "x.device_type", "x.device_index" }, "x.device",
    [[The device name: "cpu", "cuda" on the current default GPU, "cuda:N" on another GPU; always a
      name that, passed as device =, makes a tensor next to x. Read-only, as are x.device_type
      ("cpu" or "cuda") and x.device_index (the GPU's index from 0; nil on the CPU).]] },
  { "Queries", { "x:is_contiguous" }, "x:is_contiguous()",
    [[true when x's elements are packed in row-major order (views such as transposes are not).]] },
  { "Queries", { "x:totable" }, "x:totable([opts])",
    [[A nested Lua table of x's values (booleans for a bool tensor; int64 values as Lua numbers,
      exact up to 2^53, or with opts = {exact = true} as int64_t cdata, exact for every value); a 0-d
      tensor gives its value. Copies from the device when x is on CUDA.]],
    [[An unknown option; exact that is not a boolean.]] },
  { "Queries", { "x:item" }, "x:item([opts])",
    [[The value of a one-element tensor as a Lua number (or boolean). With opts = {exact = true},
      an int64 tensor gives an int64_t cdata, exact beyond 2^53.]],
    [[x has other than one element; an unknown option.]] },
  { "Queries", { "tostring" }, "tostring(x) / print(x)",
    [[The values, then a line such as [cuscan float32 tensor 2x3, cuda]. float32, float16 and
      bfloat16 values show 4 digits after the point (or in scientific notation when their magnitudes call for it); float64
      values at least 4 and as many more as make each value read back as itself, so values that
      differ print differently (0.1 + 0.2 shows as 0.30000000000000004); int64 values exactly.
      Tensors of more than 1000 elements show their corners with ... as numpy and torch do.
      cs.set_printoptions changes these settings.]] },
  { "Queries", { "cs.set_printoptions" }, "cs.set_printoptions(opts)",
    [[Printing settings, as torch.set_printoptions: opts = {precision=, threshold=, edgeitems=,
      linewidth=, sci_mode=, profile=}. precision: digits after the point (or in the mantissa) of
      every float; threshold: more elements than this are summarised with ... (default 1000;
      math.huge never); edgeitems: entries kept at each end of a summarised dim (3); linewidth:
      characters per line (80); sci_mode: true or false forces scientific notation on or off, and
      as in torch every call without it returns to the automatic choice; profile: "default",
      "short" or "full" first resets every setting to that profile (default: automatic precision).
      Settings not named keep their values.]],
    [[An unknown option or profile; a precision outside 0..99, an edgeitems or linewidth below 1,
      a negative threshold; a sci_mode that is not a boolean.]] },

  { "Views and copies", { "x:transpose" }, "x:transpose(d1, d2)",
    [[A view of x with dims d1 and d2 swapped, sharing x's storage.]],
    [[d1 or d2 out of range.]] },
  { "Views and copies", { "x:narrow" }, "x:narrow(d, start, length)",
    [[A view of elements start .. start+length-1 of dim d (start is 1-based; negative counts from
      the end), sharing x's storage.]],
    [[d out of range; start outside 1..size; length negative or running past the end.]] },
  { "Views and copies", { "x:select" }, "x:select(d, i)",
    [[The slice at index i (1-based, negative from the end) of dim d, without that dim: a view.]],
    [[d or i out of range.]] },
  { "Views and copies", { "x[i]", "#x" }, "x[i] / x[i] = v / #x",
    [[x[i] is x:select(1, i), a view (for a 1-d tensor, the element itself as a Lua number or
      boolean); x[i] = v sets that slice to v, a number or boolean (checked as x:fill checks it) or
      a tensor broadcasting to its shape; #x is the size of dim 1. i is 1-based, negative from the
      end.]],
    [[x is 0-d; i out of range, 0, fractional or not a number (only names read as fields); v as
      for x:fill, or a tensor that does not broadcast.]] },
  { "Views and copies", { "x:reshape" }, "x:reshape(shape)",
    [[x with a new shape of the same element count (one size may be -1, inferred): a view when x's
      strides allow one, else a contiguous copy.]],
    [[Sizes that do not hold x's element count; more than one -1; size errors as for cs.zeros.]] },
  { "Views and copies", { "x:contiguous" }, "x:contiguous()",
    [[x itself when contiguous, else a contiguous copy.]] },
  { "Views and copies", { "x:clone" }, "x:clone()", [[A copy of x with its own storage.]] },
  { "Views and copies", { "x:to" }, "x:to(device) / x:to(dtype) / x:to{device=, dtype=}",
    [[x on another device or converted to another dtype: x itself when nothing changes, else a
      copy. Conversion to an integer dtype truncates toward zero and saturates: values beyond its
      range become its lowest or highest value, and NaN becomes 0. Conversion to float32, float16
      or bfloat16 rounds to nearest, ties to even; values beyond the range become +-inf, and NaN,
      -0.0 and denormals are kept.]],
    [[An unknown dtype (a name that is not a device, such as "float8", is taken for a dtype) or
      device; "cuda" without a usable device.]] },
  { "Views and copies", { "x:cpu" }, "x:cpu()", [[x on the CPU (x itself when it is there).]] },
  { "Views and copies", { "x:cuda" }, "x:cuda([index])",
    [[x on GPU index (counted from 0; the default GPU when not given), x itself when it is there.
      Between GPUs the copy goes peer to peer where the GPUs allow it.]],
    [[No usable CUDA device; an index that is not a whole number >= 0, or beyond the GPUs there are.]] },
  { "Views and copies", { "x:free" }, "x:free()",
    [[Releases x's storage now instead of at garbage collection (views of it keep theirs). Any later
      use of x is an error.]] },
  { "Views and copies", { "x:is_freed" }, "x:is_freed()",
    [[true once x:free() has released x's storage, else false.]] },
  { "Views and copies", { "x:permute" }, "x:permute(dims...)",
    [[A view of x with its dims in the order given, as separate numbers or one table:
      x:permute(2, 1) or x:permute({3, 1, 2}), a permutation of 1..x:dim() (negative dims count from
      the end). Dim i of the result is dim dims[i] of x.]],
    [[Not as many dims as x has; a dim out of range or named twice.]] },
  { "Views and copies", { "x:expand" }, "x:expand(sizes)",
    [[A view of x with larger sizes, without copying: each dim of size 1 repeats to the size given
      (its stride becomes 0), new dims may be added in front, and -1 keeps a dim's size; sizes is a
      table or separate numbers, as in torch. Scans and element-wise ops read it like any view;
      writing into it (as out=, by fill or copy) is an error, since its elements share memory:
      write into x:expand(...):clone().]],
    [[Fewer sizes than x has dims; a size that differs from a dim's size other than 1; -1 for a new
      dim; negative sizes.]] },
  { "Views and copies", { "x:squeeze" }, "x:squeeze([dim])",
    [[A view of x without its dims of size 1, or without dim alone when its size is 1 (x's shape
      otherwise, as in PyTorch).]],
    [[dim out of range.]] },
  { "Views and copies", { "x:unsqueeze" }, "x:unsqueeze(dim)",
    [[A view of x with a new dim of size 1 at position dim, 1..x:dim() + 1 (negative counts from the
      end: -1 appends a last dim).]],
    [[dim out of range; x has 8 dims already.]] },
  { "Views and copies", { "x:flip" }, "x:flip(dims)",
    [[A copy of x with the order of its elements reversed along each of dims: one dim, a table of
      dims or separate numbers (x:flip(1), x:flip({1, 2})). A copy, as in PyTorch: views have
      strides >= 0. (A scan with reverse = true scans from the end without one.)]],
    [[No dims given; a dim out of range or named twice.]] },

  { "Element-wise", { "x:add" }, "x:add(y) / x + y",
    [[Element-wise sum; y is a tensor or a number. Shapes broadcast as in numpy; dtypes promote as in
      torch (bool < int32 < int64 < float16, bfloat16 < float32 < float64; float16 with bfloat16
      gives float32). A number keeps a float tensor's dtype; a whole number keeps an integer
      tensor's dtype (bool gives int64) and must fit in it; a fractional, infinite or NaN number
      gives float32. Floats compute in float64 and round once to the result's dtype. The operators
      + - * / and unary - are the same operations.]],
    [[Shapes that do not broadcast; tensors on different devices; a whole number beyond an integer
      tensor's range.]] },
  { "Element-wise", { "x:sub" }, "x:sub(y) / x - y",
    [[Element-wise difference, broadcasting as x:add.]],
    [[As for x:add; bool operands.]] },
  { "Element-wise", { "x:mul" }, "x:mul(y) / x * y", [[Element-wise product, broadcasting as x:add.]],
    [[As for x:add.]] },
  { "Element-wise", { "x:div" }, "x:div(y) / x / y",
    [[Element-wise quotient, broadcasting as x:add; integer operands give float32.]],
    [[As for x:add.]] },
  { "Element-wise", { "x:neg" }, "x:neg() / -x", [[Element-wise negation.]], [[Bool tensors.]] },
  { "Element-wise", { "x:pow" }, "x:pow(p)",
    [[Element-wise x to the power p (a number or a tensor, broadcasting).]],
    [[Negative integer powers of integer tensors.]] },
  { "Element-wise", { "x:exp" }, "x:exp()",
    [[Element-wise e^x; integer and bool tensors give float32.]] },
  { "Element-wise", { "x:log" }, "x:log()",
    [[Element-wise natural logarithm (-inf at 0, NaN below); integer and bool tensors give float32.]] },
  { "Element-wise", { "x:sqrt" }, "x:sqrt()",
    [[Element-wise square root; integer and bool tensors give float32.]] },
  { "Element-wise", { "x:abs" }, "x:abs()", [[Element-wise absolute value, same dtype.]],
    [[Bool tensors.]] },
  { "Element-wise", { "x:maximum" }, "x:maximum(y)",
    [[Element-wise larger of x and y (a tensor or a number), broadcasting; NaN propagates.]],
    [[As for x:add.]] },
  { "Element-wise", { "x:minimum" }, "x:minimum(y)",
    [[Element-wise smaller of x and y, broadcasting; NaN propagates.]],
    [[As for x:add.]] },
  { "Element-wise", { "x:lt" }, "x:lt(v)",
    [[A bool tensor, true where x < v (v a number or a tensor, broadcasting). A number is taken in
      x's dtype when x is float32, float16 or bfloat16 (as PyTorch and NumPy do: a float32 tensor
      holding 0.1 equals 0.1). cs.rand(shape):lt(0.5) is a random mask.]],
    [[Shapes that do not broadcast; tensors on different devices.]] },
  { "Element-wise", { "x:le" }, "x:le(v)", [[A bool tensor, true where x <= v.]], [[As for x:lt.]] },
  { "Element-wise", { "x:gt" }, "x:gt(v)", [[A bool tensor, true where x > v.]], [[As for x:lt.]] },
  { "Element-wise", { "x:ge" }, "x:ge(v)", [[A bool tensor, true where x >= v.]], [[As for x:lt.]] },
  { "Element-wise", { "x:eq" }, "x:eq(v)", [[A bool tensor, true where x == v.]], [[As for x:lt.]] },
  { "Element-wise", { "x:ne" }, "x:ne(v)", [[A bool tensor, true where x ~= v.]], [[As for x:lt.]] },
  { "Element-wise", { "x:logical_not" }, "m:logical_not()", [[Element-wise not of a mask.]] },
  { "Element-wise", { "x:logical_and" }, "m:logical_and(m2)",
    [[Element-wise and of two masks (m2 may be a boolean), broadcasting.]],
    [[As for x:lt.]] },
  { "Element-wise", { "x:logical_or" }, "m:logical_or(m2)",
    [[Element-wise or of two masks (m2 may be a boolean), broadcasting.]],
    [[As for x:lt.]] },
  { "Element-wise", { "x:fill" }, "x:fill(v)",
    [[Sets every element of x to v in place (through a view, the viewed elements); returns x. An
      integer dtype takes v truncated toward zero.]],
    [[v is not a number or boolean, or is NaN, inf or beyond the range of x's integer dtype; x is an
      expanded view.]] },
  { "Element-wise", { "x:copy" }, "x:copy(y)",
    [[Sets x's elements to y's in place (y of any dtype and device, broadcasting to x's shape,
      converted as x:to converts); returns x.]],
    [[y's shape does not broadcast to x's; x is an expanded view.]] },
  { "Element-wise", { "cs.where" }, "cs.where(mask, a, b)",
    [[A new tensor holding a where the bool tensor mask is true and b where it is false. a and b
      are tensors on mask's device, numbers or booleans; the three broadcast to one shape, and the
      dtype is a's and b's promoted as for x:add (two numbers give float32).]],
    [[mask is not a bool tensor; tensors on different devices; shapes that do not broadcast.]] },
  { "Element-wise", { "cs.cat" }, "cs.cat(list, dim)",
    [[The tensors of list (one device; shapes equal except along dim) joined along dim (default 1),
      in the promoted dtype.]],
    [[An empty list; tensors on different devices; shapes that differ off dim; 0-d tensors.]] },

  { "Reductions", { "x:sum" }, "x:sum([dim])",
    [[Without dim, the sum of all elements as a Lua number; with dim, a tensor without that dim
      (integer and bool sums are int64).]],
    [[dim out of range.]] },
  { "Reductions", { "x:mean" }, "x:mean([dim])",
    [[The mean of all elements (a Lua number) or along dim (integers give float32).]],
    [[dim out of range.]] },
  { "Reductions", { "x:max" }, "x:max([dim])",
    [[The largest element (a Lua number) or the largest along dim; NaN propagates.]],
    [[dim out of range.]] },
  { "Reductions", { "x:min" }, "x:min([dim])",
    [[The smallest element (a Lua number) or the smallest along dim; NaN propagates.]],
    [[dim out of range.]] },

  { "Files", { "cs.save" }, "cs.save(path, x[, opts])",
    [[Writes x to the file at path, in the format its extension names (.npy, .csv, .txt) or
      opts.format ("npy", "csv" or "txt"). .npy: NumPy's format (1.0, or 2.0 for a very large
      header), any dtype and shape, readable by numpy.load (bfloat16, which NumPy lacks, as <V2
      raw words, as ml_dtypes' arrays are saved: numpy.load(path).view(ml_dtypes.bfloat16)). .csv
      and .txt: 1-d (one value a line) and 2-d tensors, one row a line, separated by
      opts.delimiter ("," for .csv, " " for .txt);
      floats with the fewest digits that read back as the same value (float64 bit for bit), nan,
      inf and -inf; integers exactly; bool as 1 and 0; opts.header, a line or a list of column
      names, goes first. The file is written under a temporary name beside path and renamed over
      path when complete, so a failed save leaves no partial file under path.]],
    [[path without a known extension and no format; an option the format does not take; .csv or
      .txt of a tensor that is not 1-d or 2-d; a header of the wrong length, or a name holding the
      delimiter; a delimiter that a number's text may hold (digits, letters, ".", "+", "-"); the
      file cannot be written (the message names path and the reason).]] },
  { "Files", { "cs.load" }, "cs.load(path[, opts])",
    [[The tensor in the file at path, the format from its extension or opts.format; opts.device
      places it (the default device unless named). .npy: format versions 1.0, 2.0 and 3.0; <f4,
      <f8, <f2, <i4, <i8, |b1, and 2-byte raw words (<V2, as an array of ml_dtypes' bfloat16 is
      saved) as bfloat16 (big-endian data is converted); C or Fortran order (a Fortran array
      comes back as a column-major view, as numpy loads it); 0-d and empty arrays. opts.mmap = true
      maps the file copy-on-write instead of reading it: a CPU tensor whose pages load from the
      file when touched, so a file larger than memory can be scanned in pieces with narrow; writes
      to it stay in memory and never reach the file (and shrinking the file while it is mapped
      makes reads of the lost pages fault, as with any memory map). .csv and .txt: one row a line, fields
      separated by opts.delimiter ("," for .csv, runs of spaces and tabs for .txt), lines
      starting with # skipped; a file of one column gives a 1-d tensor, any other rows x columns;
      opts.dtype, float64 by default; with opts.header = true the first line names the columns
      and the names come back as a second result.]],
    [[A missing, unreadable or malformed file, each naming the file and the problem: no permission,
      a directory, bad magic, truncated data, a header whose shape does not match the data, a shape
      that overflows, an unsupported dtype (such as complex, uint8 or object), a value that is
      not a number, rows of different lengths; mmap of big-endian data or with a device other than
      "cpu"; an option the format does not take.]] },

  { "Sharing memory", { "x:data_ptr" }, "x:data_ptr()",
    [[The address of x's first element as a void * cdata (a device pointer when x is on CUDA), for
      C code called through the FFI; element i of dim d lies x:stride(d) elements further along.
      Valid while x (or another view of its storage) lives: keep x referenced while the pointer is
      used. NULL for a tensor of no elements.]] },
  { "Sharing memory", { "x:to_dlpack" }, "x:to_dlpack()",
    [[A DLManagedTensor * (DLPack 0.8 and later) describing x without a copy: its data, shape,
      strides (in elements), dtype (bool as kDLBool, bfloat16 as kDLBfloat) and device (kDLCPU or kDLCUDA device 0). It
      keeps x's storage alive until its deleter is called, which whoever takes it (cs.from_dlpack,
      a C library) must do exactly once; one that is never handed on leaks x's storage. Waits for
      queued CUDA work, so a consumer on another stream sees x's values.]] },
  { "Sharing memory", { "cs.from_dlpack" }, "cs.from_dlpack(ptr)",
    [[A tensor over the memory of a DLManagedTensor * (ptr, any pointer cdata to one), without a
      copy, taking ptr over: its deleter is called once the tensor and every view of it are gone.
      CPU, CUDA host and CUDA device 0 memory; float16, float32, float64, bfloat16 (kDLBfloat),
      int32, int64 and bool (kDLBool);
      strides >= 0 (NULL strides: row-major). The producer's writes must be complete, and ptr
      must stay valid until its deleter runs (one made with ffi.new must stay referenced).]],
    [[ptr is not a pointer or is NULL; an unsupported device, dtype (the message names it), lanes
      or negative stride; more than 8 dims. On an error ptr remains the caller's, not deleted.]] },

  { "Checking results", { "cs.allclose" }, "cs.allclose(a, b[, opts])",
    [[true when every element satisfies |a - b| <= atol + rtol * |b| (numpy's rule), with
      opts = {rtol=1e-5, atol=1e-8, equal_nan=false}. a and b are tensors (on any devices) or nested
      tables, and broadcast.]],
    [[Shapes that do not broadcast; negative or NaN tolerances; an unknown option.]] },
  { "Checking results", { "cs.max_abs_diff" }, "cs.max_abs_diff(a, b)",
    [[The largest |a - b| over the elements (NaN where a NaN meets a number); across devices.]],
    [[Shapes that do not broadcast.]] },
  { "Checking results", { "cs.is_tensor" }, "cs.is_tensor(v)", [[true when v is a cuscan tensor.]] },
  { "Checking results", { "assert.tensor_near" }, "assert.tensor_near(expected, actual[, rtol[, atol]])",
    [[After require("cuscan.assertions") in a busted spec: passes when actual (a tensor) has
      expected's shape (expected is a tensor, a nested table or a number), a compatible dtype and
      every element within atol + rtol * |expected| (defaults by dtype: float32 1e-5 and 1e-6,
      float64 1e-9 and 1e-12, float16 1e-3 and 1e-5, bfloat16 1.6e-2 and 1e-5, as torch has
      them; integers exact). A failure gives the first differing index, both
      values, and the largest absolute and relative errors.]] },
  { "Checking results", { "assert.tensor_equal" }, "assert.tensor_equal(expected, actual[, opts])",
    [[As assert.tensor_near with exact equality, by numpy's array_equal rule: -0.0 equals +0.0 (and
      NaN matches NaN). opts = {strict = true} also compares the signs of zeros.]] },
  { "Checking results", { "assert.same_shape" }, "assert.same_shape(a, b)",
    [[Passes when a and b (tensors or nested tables) have one shape.]] },

  { "Timing", { "cs.event" }, "cs.event([device])",
    [[A timing event on the device (the default one unless named; "cuda:N" times GPU N's queue).
      e:record() marks a point in the queued work and returns e; e:elapsed(later) waits for later and returns the milliseconds
      between them: device time on CUDA, a monotonic clock on the CPU.]],
    [[An unknown device; a method called on something that is not an event (e.record()); elapsed
      with something that is not an event, between events not both recorded or of two devices.]] },
  { "Timing", { "timeit" }, "timeit(fn[, opts])",
    [[(bin/cuscan) Runs fn once to warm up, then again and again (at least 5 times and 0.2 s, or
      opts.runs times), timing each run with events on the default device (device time on CUDA,
      after the queued work completes) and prints the median, minimum and maximum in milliseconds.
      Returns a table {median=, min=, max=, runs=, device=} in milliseconds.]],
    [[fn is not a function; errors raised by fn.]] },

  { "Communicators", { "cs.comm_unique_id" }, "cs.comm_unique_id()",
    [[A fresh id, a 128-byte string, that the processes of one communicator share (rank 0 makes it,
      the others receive it: through a file in a shared directory, MPI, ...). Communicators use
      NCCL (libnccl.so.2, loaded when first needed) with NVLink multicast off (NCCL_NVLS_ENABLE=0
      unless the environment sets it).]],
    [[NCCL is not available (the message says why: no GPU, libnccl.so.2 not found).]] },
  { "Communicators", { "cs.comm_init_all" }, "cs.comm_init_all(devices)",
    [[A list of communicators over the GPUs of this process, rank k - 1 on devices[k] (GPU names
      "cuda:N" or indices from 0). Each has c:rank() (from 0), c:size(), c:device() ("cuda:N") and
      c:all_gather(recv, send): every rank's send (contiguous, on c's GPU) into recv (contiguous,
      c:size() times as many elements of send's dtype, on c's GPU) in rank order, queued on that
      GPU so that later work there sees it; returns recv. Several communicators' calls go inside
      one cs.comm_group.]],
    [[devices is not a non-empty list of GPUs, or names one twice; NCCL is not available; for
      all_gather, a recv or send that is not contiguous on c's GPU, of another dtype or size, or
      overlapping.]] },
  { "Communicators", { "cs.comm_init_rank" }, "cs.comm_init_rank(id, nranks, rank, device)",
    [[This process's communicator: rank `rank` (0 to nranks - 1) of nranks processes, on any
      hosts, that share id (cs.comm_unique_id()), on the GPU named (a name or an index). Waits until
      every rank has joined. Methods as for cs.comm_init_all.]],
    [[id is not a 128-byte string; nranks or rank out of range; device not a GPU; NCCL is not
      available.]] },
  { "Communicators", { "cs.comm_group" }, "cs.comm_group(fn)",
    [[Runs fn, whose collectives on several communicators of this process then start together (one
      all_gather per communicator: NCCL's group calls); returns what fn returns.]],
    [[fn is not a function; NCCL is not available; errors raised by fn.]] },

  { "Module", { "cs.version" }, "cs.version",
    [[The version string of the library, such as "0.1.0" (also `bin/cuscan --version`).]] },
  { "Module", { "cs.dtypes" }, "cs.dtypes",
    [[The dtype names: {"float32", "float64", "int32", "int64", "bool", "float16", "bfloat16"}.
      float16 is IEEE binary16 (11 significant bits, largest 65504, denormals down to 2^-24);
      bfloat16 the top half of a float32 (8 significant bits, float32's range). Both are 2 bytes an
      element; arithmetic and scans compute in float64 and round each result once.]] },

  { "REPL", { "help" }, "help([topic])",
    [[(bin/cuscan) Prints the signature and description of a function given as a value
      (help(cs.cumsum)) or a name (help"cumsum", help"x:narrow"); help(cs) lists every function of
      the module, help(x) every method of the tensor x, help() every topic. In the REPL, ?name is
      help"name".]] },
  { "REPL", { "exit", "quit" }, "exit / quit",
    [[(bin/cuscan) Typed alone on a line, leaves the REPL, as Ctrl-D does; exit(n) and quit(n)
      leave with status n. Ctrl-C drops the line being typed (once it is entered) and the REPL goes
      on. Tab completes globals, cs. names, the methods of a tensor (x:) and the option names of the
      call being typed.]] },
}

local GROUPS = { "Devices", "Communicators", "Constructors", "Scans", "Sharded tensors", "Queries", "Views and copies",
                 "Element-wise",
                 "Reductions", "Files", "Sharing memory", "Checking results", "Timing", "Module", "REPL" }

-- The names each function takes in its opts table, by entry key (the REPL completes them;
-- spec/repl_spec.lua checks them against what each function accepts).
local OPTIONS = {
  ["cs.tensor"] = { "dtype", "device" },
  ["cs.zeros"] = { "dtype", "device", "devices", "shard_dim" },
  ["cs.ones"] = { "dtype", "device", "devices", "shard_dim" },
  ["cs.full"] = { "dtype", "device", "devices", "shard_dim" },
  ["cs.rand"] = { "seed", "dtype", "device", "devices", "shard_dim" },
  ["cs.arange"] = { "dtype", "device", "devices", "shard_dim" },
  ["cs.cumsum"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out", "dtype" },
  ["cs.cumprod"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out", "dtype" },
  ["cs.cummax"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out" },
  ["cs.cummin"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out" },
  ["cs.logcumsumexp"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out", "dtype" },
  ["cs.segment_ids_to_reset"] = { "reverse" },
  ["cs.explain"] = { "op", "reverse", "exclusive", "mask", "reset", "segments", "initial", "out", "dtype" },
  ["x:reverse_cumsum"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out", "dtype" },
  ["x:masked_cumsum"] = { "reverse", "exclusive", "mask", "reset", "segments", "initial", "out", "dtype" },
  ["x:to"] = { "device", "dtype" },
  ["cs.allclose"] = { "rtol", "atol", "equal_nan" },
  ["timeit"] = { "runs", "warmup", "device", "quiet" },
}

local function squash(s)
  return (s and s:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")) or nil
end

local entries, by_name = {}, {}
for _, e in ipairs(ENTRIES) do
  local entry = { group = e[1], names = e[2], name = e[2][1], signature = e[3], doc = squash(e[4]),
                  errors = squash(e[5]), options = OPTIONS[e[2][1]] }
  entries[#entries + 1] = entry
  for _, n in ipairs(entry.names) do by_name[n] = entry end
end

local help = { entries = entries, groups = GROUPS }

local function wrap(text, width, indent)
  local lines, line = {}, indent
  for word in text:gmatch("%S+") do
    if #line + #word + 1 > width and line ~= indent then
      lines[#lines + 1] = line
      line = indent
    end
    line = (line == indent) and (line .. word) or (line .. " " .. word)
  end
  if line ~= indent then lines[#lines + 1] = line end
  return concat(lines, "\n")
end

-- The entry for a name: "cumsum", "cs.cumsum", "x:cumsum", ":cumsum", "x.cumsum", "dtype".
function help.find(name)
  name = name:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%(%)$", "")
  if by_name[name] then return by_name[name] end
  local bare = name:gsub("^cs%.", ""):gsub("^x[:.]", ""):gsub("^:", ""):gsub("^assert%.", "")
  for _, key in ipairs({ "cs." .. bare, "x:" .. bare, "x." .. bare, "assert." .. bare, bare }) do
    if by_name[key] then return by_name[key] end
  end
  return nil
end

-- The module and the tensor methods, loaded when first needed (README's reference needs neither).
local function module()
  return require("cuscan"), require("cuscan.core").methods
end

-- The entry for a function value (a module function, a tensor method or a REPL global).
function help.lookup(f)
  local cs, methods = module()
  for k, v in pairs(cs) do
    if v == f and by_name["cs." .. k] then return by_name["cs." .. k] end
  end
  for k, v in pairs(methods) do
    if v == f and by_name["x:" .. k] then return by_name["x:" .. k] end
  end
  for _, name in ipairs({ "timeit", "exit", "quit" }) do
    if f == rawget(_G, name) then return by_name[name] end
  end
  return nil
end

local function entry_text(e)
  local out = { e.signature, wrap(e.doc, 78, "  ") }
  if e.errors then out[#out + 1] = wrap("Errors: " .. e.errors, 78, "  ") end
  return concat(out, "\n")
end

-- Every entry by group; with a pattern, only the entries with a name that matches it, each shown
-- by that name (so help(x) shows x:cumsum where help() shows cs.cumsum).
local function topic_list(pattern)
  local out = {}
  for _, g in ipairs(GROUPS) do
    local names = {}
    for _, e in ipairs(entries) do
      if e.group == g then
        for _, n in ipairs(pattern and e.names or { e.name }) do
          if not pattern or n:match(pattern) then
            names[#names + 1] = n
            break
          end
        end
      end
    end
    if #names > 0 then out[#out + 1] = wrap(g .. ": " .. concat(names, ", "), 78, "  ") end
  end
  return concat(out, "\n")
end

local function is_tensor(v)
  local t = type(v)
  return (t == "table" or t == "cdata" or t == "userdata") and module().is_tensor(v)
end

-- help(topic): prints the entry of a function or a name, or a list (help(), help(cs), help(x)).
-- (help on its own, as the REPL shows a value, says how to call it rather than listing its table)
setmetatable(help, { __tostring = function()
  return "help: call it: help() for an overview, help(cs) or help(x) for the lists, help\"cumsum\" or ?cumsum " ..
         "for one function"
end, __call = function(_, topic)
  local e
  if topic == nil then
    print("cuscan " .. module().version .. ": help(cs.cumsum), help\"cumsum\" or ?cumsum describes one " ..
          "function; help(cs) and help(x) list the module's functions and a tensor's methods. Topics:")
    print(topic_list())
    print("Dims are 1-based (negative from the end). Tab completes names; exit, quit or Ctrl-D leaves.")
    return
  end
  if rawequal(topic, help) then
    e = by_name.help
  elseif type(topic) == "function" then
    e = help.lookup(topic)
    if not e then print("help: no entry for this function (help() lists the topics)") return end
  elseif type(topic) == "string" then
    e = help.find(topic)
    if not e then
      local like = {}
      local low = topic:lower()
      for _, x in ipairs(entries) do
        if x.name:lower():find(low, 1, true) or x.doc:lower():find(low, 1, true) then
          like[#like + 1] = x.name
        end
      end
      if #like > 0 then
        print(format("help: no entry named %q; entries that mention it: %s", topic, concat(like, ", ")))
      else
        print(format("help: no entry named %q (help() lists the topics)", topic))
      end
      return
    end
  elseif rawequal(topic, module()) then
    print("cuscan module functions (help\"name\" for one):")
    print(topic_list("^cs%."))
    return
  elseif is_tensor(topic) then
    print(format("tensor methods of a %s %s tensor (help\"name\" for one):", topic.dtype, topic.device))
    print(topic_list("^x[:.]"))
    return
  else
    print("help: expected a function, a name, cs or a tensor, got a " .. type(topic))
    return
  end
  print(entry_text(e))
end })

-- The option names of the function called name ("cumsum", "x:to", "cs.rand"), or nil.
function help.options(name)
  local e = help.find(name)
  return e and e.options
end

-- The API reference in Markdown, as README.md carries it.
function help.markdown()
  local out = {}
  for _, g in ipairs(GROUPS) do
    out[#out + 1] = "### " .. g .. "\n"
    for _, e in ipairs(entries) do
      if e.group == g then
        local sigs = {}
        for part in (e.signature .. " / "):gmatch("(.-) / ") do sigs[#sigs + 1] = "`" .. part .. "`" end
        out[#out + 1] = "- " .. concat(sigs, " / ") .. ": " .. e.doc ..
                        (e.errors and (" *Errors:* " .. e.errors) or "")
      end
    end
    out[#out + 1] = ""
  end
  return concat(out, "\n")
end

local BEGIN = "<!%-%- API reference: [^\n]*%-%->\n"
local END = "<!%-%- end of API reference %-%->"

-- text (README.md's) with its API reference section replaced by help.markdown(); nil and a
-- message when the section's markers are missing.
function help.readme(text)
  local _, e = text:find(BEGIN)
  local s2 = e and text:find(END, e)
  if not s2 then
    return nil, "no API reference section (<!-- API reference: ... --> ... <!-- end of API reference -->)"
  end
  return text:sub(1, e) .. help.markdown() .. text:sub(s2)
end

-- Rewrites the API reference section of the README at path (`make readme`).
function help.write_readme(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  local new, err = help.readme(text)
  if not new then error("cuscan: " .. path .. ": " .. err, 0) end
  if new ~= text then
    f = assert(io.open(path, "wb"))
    f:write(new)
    f:close()
  end
end

return help
