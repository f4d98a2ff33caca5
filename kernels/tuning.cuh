// tuning.cuh - every tuning knob of the scan kernels, per GPU architecture, apart from the
// algorithms (as CUB's tuning_scan.cuh). Kernels take a policy as a template parameter; the host
// picks the policy of the running GPU (with_tuning) and compiles each kernel body only in the
// compilation pass of the architectures its policy serves. A new GPU means a new policy here.
// Why each value is what it is: bench/NOTES.md, by the names used here.
#pragma once
#include <cstdint>
#include "internal.h"

namespace cuscan {

// Ampere and anything older or unknown: the Hopper values, untuned.
struct TuningSm80 {
    static constexpr int kMinArch = 0, kMaxArch = 900;   // __CUDA_ARCH__ range served
    static constexpr bool kSlabWindowClass = false;    // the window's slab tile class (below)
    static constexpr bool kSlabLargeClass = false;     // the larger 4-byte slab tile class (below)

    // rows: a block of kRowWarps warps scans a tile of kRowBytes input bytes a thread
    static constexpr int kRowWarps = 8;
    static constexpr int kRowBytes = 128;
    static constexpr int kRowBytesWideAcc = 64;        // ... in one-tile kernels of 4- and 2-byte inputs folded in 8 bytes
    static constexpr int kRowBlocksPerSm = 3;          // launch bound of the one-tile kernels
    static constexpr int kPieceScale = 4;              // line pieces hold this many tiles' bytes
    static constexpr int kPieceKeepDivisor = 2;        // the share of a piece held in registers (1/n)
    static constexpr int kPieceKeepDivisorWideAcc = 4; // ... when a 4- or 2-byte input accumulates in 8 bytes
    static constexpr int kMaskedLineDivisor = 2;       // masked whole-lines tiles are this much smaller
    static constexpr int kHalfLineDivisor = 2;         // ... and those of 2-byte floats into 2-byte outputs
    static constexpr int kMaskedPieceDivisor = 4;      // masked line pieces are this much smaller
    static constexpr int kHalfPieceDivisor = 4;        // ... and unmasked ones of 2-byte floats (widened, they spill)
    static constexpr int kSegmentedMinTilesPerSm = 2;  // short packed lines share tiles only above this
    // flagged scans (scan_ops.cuh: larger states, flags beside the tile)
    static constexpr int kRowVecFlagged = 4;           // elements a lane moves at once (each has an index)
    static constexpr int kRowBytesFlagged = 64;        // one-tile kernels
    static constexpr int kRowChunksFlagged = 4;        // ... at most this many chunks (warp scans) a tile
    static constexpr int kLineBytesFlagged = 32;       // whole-lines kernels (two tiles held)
    static constexpr int kPieceBytesFlagged = 128;     // line pieces
    static constexpr int kPieceChunksFlagged = 8;
    static constexpr int kPieceKeepDivisorFlagged = 4; // ... the share of a piece held in registers (1/n)
    static constexpr int kRowBlocksPerSmFlagged = 2;   // launch bound of the whole-lines kernels
    static constexpr int kRowBlocksPerSmIndexed = 3;   // ... of cummax / cummin
    static constexpr int kRowTileBlocksPerSmFlagged = 4;   // ... and of the one-tile kernels
    static constexpr int kWholeLinesMinLinesPerSm = 4; // a block walks whole lines above this
    static constexpr int kLineBlocksPerSmByteInput = 2; // ... its launch bound for 1-byte inputs into 8 bytes
    static constexpr int kWarpLinesMinLinesPerSm = 32; // flagged scans: a warp walks each line above this
    static constexpr int kWarpLinesMinLinesPerSmLse = 6;   // ... logcumsumexp (one exp an element there, two in a block's tiles)
    static constexpr int kWarpLineBytesFlagged = 64;   // ... holding two tiles of this many bytes a thread
    static constexpr int kWarpLinesBlocksPerSm = 3;    // ... launch bound
    static constexpr int kWarpLinesBlocksPerSmIndexed = 2;   // ... cummax / cummin (value and index states)
    static constexpr int kWarpLineBytesSegmented = 32;       // segmented sums and products: smaller tiles
    static constexpr int kWarpLinesBlocksPerSmSegmented = 4; // ... at more blocks an SM

    // columns: units of (kColWarps / WC) x rows-per-warp rows by 32 * WC * CV columns
    static constexpr int kColWarps = 8;
    static constexpr int kColMaxRows = 32;             // rows a thread holds
    static constexpr int kColMaxRowsWideAcc = 16;      // ... when a 4-byte input accumulates in 8 bytes
    static constexpr int kColMaxRowsFlagged = 16;      // ... in flagged scans
    static constexpr int kColWalkMaxRounds = 3;        // strips walk when fewer rounds than this
    static constexpr int kColPrefetchMaxBytes = 2;     // inputs this narrow ask L2 for a unit's rows one unit ahead
    static constexpr bool kColWholeUnitsIndexed = true;    // cummax / cummin fold whole units without a test a row

    // slabs: a tile of kSlabStageBytes (in the output type) staged in shared memory
    static constexpr int kSlabThreads = 256;
    static constexpr int kSlabStageBytes = 32 * 1024;
    static constexpr int kSlabBlocksPerSm = 4;
    static constexpr int kSlabBlocksPerSmWide = 3;     // ... for 8-byte outputs (registers for their segments)
    static constexpr int kSlabMaskedDivisor = 1;       // masked tiles hold this much less
    static constexpr int kSlabStageBytesFlagged = 8 * 1024;    // flagged scans: the stage (their tables are larger)
    static constexpr int kSlabStageBytesFlaggedWide = 8 * 1024;   // ... for 8-byte outputs
    static constexpr bool kSlabHoldFlaggedWideLookback = true;     // ... whose look-back pieces hold segments
    static constexpr int kSlabBlocksPerSmFlagged = 4;  // ... and blocks an SM (more small tiles in flight)
    static constexpr int kSlabSegRowsMaxFlagged = 9;   // ... and rows of a column a thread holds
    static constexpr bool kSlabHoldFlagged = true;     // ... in registers between the passes
    static constexpr int kSlabTileElements = 4096;     // and at most this many elements
    static constexpr int kSlabSegRowsMax = 17;         // rows of a column a thread holds in registers
    // unmasked cumsum / cumprod into 4-byte outputs: twice the tile, so a tile's fixed costs (three
    // block barriers, the table scan) are shared by the bytes of an 8-byte type's tile; a segment
    // read twice from the stage leaves the registers for a fourth block an SM
    static constexpr int kSlabTileElements4 = 8192;
    static constexpr int kSlabSegRowsMax4 = 33;
    static constexpr int kSlabBlocksPerSm4 = 4;
    static constexpr bool kSlabHold4 = false;
    // masked cumsum / cumprod into 4-byte outputs, and unmasked ones into 2-byte outputs: tiles of
    // their own; a segment read twice from the stage (no hold, the 2-byte class) leaves registers
    // for larger tiles
    static constexpr int kSlabTileElementsMasked4 = 6144;
    static constexpr int kSlabSegRowsMaxMasked4 = 25;
    static constexpr int kSlabBlocksPerSmMasked4 = 4;
    static constexpr bool kSlabHoldMasked4 = true;
    static constexpr int kSlabTileElements2 = 16384;
    static constexpr int kSlabSegRowsMax2 = 63;
    static constexpr int kSlabBlocksPerSm2 = 4;
    static constexpr bool kSlabHold2 = false;
    // masked ones into 2-byte outputs: a class of their own where kSlabTileElementsMasked2 is set,
    // else the general one above
    static constexpr int kSlabTileElementsMasked2 = 8192;
    static constexpr int kSlabSegRowsMaxMasked2 = 33;
    static constexpr int kSlabBlocksPerSmMasked2 = 4;
    static constexpr bool kSlabHoldMasked2 = false;
    // larger tiles of 4-byte outputs (SlabLargeTiles, 0: none): taken where the plan at their size
    // holds whole slabs and kSlabLargeMinGainPct percent of the elements a tile of the class above
    // holds (or whole slabs the class above cuts into pieces, masked); where the tile does not grow,
    // their kernels (more rows a segment) run slower than the smaller class's
    static constexpr int kSlabLargeTileElements4 = 0;
    static constexpr int kSlabLargeSegRowsMax4 = 39;
    static constexpr int kSlabLargeMinGainPct4 = 118;  // ... of tiles a column's segments share (a segment a thread: not)
    static constexpr int kSlabLargeTileElementsMasked4 = 0;
    static constexpr int kSlabLargeSegRowsMaxMasked4 = 33;
    static constexpr int kSlabLargeMinGainPctMasked4 = 145;
    static constexpr bool kSlabHeadedSegments = true;  // plain scans mark slab heads in a bit mask a segment
    static constexpr bool kSlabHeadedFlagged = true;   // ... and flagged scans too
    static constexpr bool kSlabResetsAsHeads = true;   // segmented sums in whole tiles: the plain loops, resets as heads
    static constexpr int kSlabMaxWidth = 512;          // columns of a tile whose slab pieces join up
    static constexpr int kSlabWalkMaxStripsPerSm = 0;  // pieces walk their strip below this, else look back
    static constexpr int kSlabTreeMaxStrips = 1;       // look-backs of this few strips join by a tree
    static constexpr int kSlabWindowMaxStrips = 16;    // ... or, first, by a window of flags
    static constexpr int kSlabWindowMaxWidth = 16;     // ... when a tile is this narrow (the values read grow with it)
    // look-backs whose pieces wait on a front into 4- and 8-byte outputs take tiles of a class of
    // their own (dynamic shared memory): a piece's wait and fold are shared by more bytes, and more
    // bytes wait in flight an SM (0: the classes above). Unmasked window look-backs, and the tree of
    // a single strip, masked or not (a masked tile reads its mask once the copies have landed); 2-byte
    // outputs gain no rows (SR_MAX bounds them), masked windows measured slower.
    static constexpr int kSlabWindowTileBytes = 64 * 1024;
    static constexpr int kSlabWindowSegRowsMax = 63;
    static constexpr int kSlabWindowBlocksPerSm = 3;
    static constexpr int kSlabWindowFoldStates = 512;  // ... the states of its fold's buffer
    static constexpr int kSlabWindowMinWaves = 2;      // ... when its tiles fill the SMs this many times
    static constexpr bool kSlabWindowTree = true;      // ... the tree of a single strip too

    // which family a flat scan takes (scan_launch.cuh): wide inner dims with long lines go to the
    // column family, packed rows of a vector-friendly length to the row family, the rest to slabs
    static constexpr int kColumnsMinInnerBytes = 1024;
    static constexpr int kColumnsMinLen = 9;           // (8 rows of kSlabMaxWidth fit a cumsum's slab tile whole)
    static constexpr int kColumnsMinLenFlagged = 8;    // (flagged slab tiles are smaller)
    // ... and logcumsumexp, bound by its arithmetic, from narrower inner dims with long lines
    // (columns fold plain sums, slabs joined states)
    static constexpr int kColumnsMinInnerBytesLse = 256;
    static constexpr int kColumnsMinLenLse = 64;
    static constexpr int kRowsMinLen = 1;              // shorter packed rows go to slabs
    static constexpr int kSlabsLinesMaxLen4 = 0;       // ... and packed rows into 4-byte outputs this short
    // masked packed lines into outputs this wide go to slabs when a slab tile holds a line whole
    // (0: none)
    static constexpr int kSlabsMaskedLinesMinOutBytes = 8;
    static constexpr int64_t kRowsMinUnalignedLine = 65536;   // a single unmasked line this long goes to rows
    // plain scans between columns and slabs, by the column unit (scan_launch.cuh: columns_or_slabs):
    // rows a warp holds, at least; masked columns at least this long, a lane's two columns
    // at once for 4-byte inputs, and this many bytes of a row for 8-byte ones; unmasked narrow rows
    // from this many bytes go to columns where slabs would be look-back pieces (0: choose_family's bound)
    static constexpr int kColumnsMinRowsPerWarp = 0;
    static constexpr int kColumnsMaskedMinLen = 0;
    static constexpr int kColumnsMaskedMinInnerBytes8 = 0;
    static constexpr int kColumnsOverPiecesMinInnerBytes4 = 0;
    static constexpr int kColumnsOverPiecesMinInnerBytes8 = 0;
};

// The window's slab tile class (kSlabWindow* above; scan_launch.cuh: launch_slabs), as a policy.
template <class Base>
struct SlabWindowTiles : Base {
    static constexpr bool kSlabWindowClass = true;
};

// Hopper (H100, H200): the values measured there.
struct TuningSm90 : TuningSm80 {
    static constexpr int kMinArch = 900, kMaxArch = 100000;
    // flagged 8-byte outputs: tiles of as many elements as 4-byte ones (four blocks of them fit an
    // SM's shared memory here, not an A100's), their look-back pieces reading the stage twice
    static constexpr int kSlabStageBytesFlaggedWide = 16 * 1024;
    static constexpr bool kSlabHoldFlaggedWideLookback = false;
    // an H200 moves bytes faster than these tiles' fixed work keeps up with: larger tiles where
    // they grow, and short packed rows as slabs (their tiles larger than the row family's; longer
    // masked ones, a tile a row, start slower than the row family's)
    static constexpr int kSlabLargeTileElements4 = 10240;
    static constexpr int kSlabLargeTileElementsMasked4 = 8192;
    static constexpr int kSlabsLinesMaxLen4 = 1024;
    static constexpr int kColumnsMinRowsPerWarp = 8;
    static constexpr int kColumnsMaskedMinLen = 17;
    static constexpr int kColumnsMaskedMinInnerBytes8 = 4096;
    static constexpr int kColumnsOverPiecesMinInnerBytes4 = 512;
    static constexpr int kColumnsOverPiecesMinInnerBytes8 = 96;
};

// The larger 4-byte slab tile class (kSlabLarge* above; scan_launch.cuh: launch_slabs), as a policy.
template <class Base>
struct SlabLargeTiles : Base {
    static constexpr bool kSlabLargeClass = true;
    static constexpr int kSlabStageBytes =
        Base::kSlabStageBytes > Base::kSlabLargeTileElements4 * 4 ? Base::kSlabStageBytes : Base::kSlabLargeTileElements4 * 4;
    static constexpr int kSlabTileElements4 = Base::kSlabLargeTileElements4;
    static constexpr int kSlabSegRowsMax4 = Base::kSlabLargeSegRowsMax4;
    static constexpr int kSlabTileElementsMasked4 = Base::kSlabLargeTileElementsMasked4;
    static constexpr int kSlabSegRowsMaxMasked4 = Base::kSlabLargeSegRowsMaxMasked4;
};

// Calls f(Policy{}) with the policy of the running GPU.
template <typename F>
inline cs_status with_tuning(int compute_capability, F &&f)
{
    if (compute_capability >= 90) return f(TuningSm90{});
    return f(TuningSm80{});
}

// True in the device compilation pass whose architecture the policy serves (and on the host), so
// that a kernel instantiated for another GPU's policy compiles to an empty body.
template <typename P>
__host__ __device__ constexpr bool policy_active()
{
#if defined(__CUDA_ARCH__)
    return __CUDA_ARCH__ >= P::kMinArch && __CUDA_ARCH__ < P::kMaxArch;
#else
    return true;
#endif
}

}  // namespace cuscan
