"""The default schedule: what an untuned kernel gets instead of TE's serial, scalar loop nest.

Elementwise producers are inlined into their consumers; what remains is parallelised over
its outer spatial loops and vectorised along the innermost one. A block named "matmul"
(with its weight-packing block "pack") gets a register tile: rows x 32 columns held in
vector registers, the packed weight streamed along k, and its epilogue (bias,
activation) computed per tile while the tile is still in cache. A u8 x s8 product
("vnni_matmul" over "vnni_pack") is tensorized into vpdpbusd over a tile of 8 rows x 32
columns, its weight packed by unrolled 16 x 4 transposes; column sums ("colsum", the
zero-point correction) run as vectors down the rows. meta_schedule tuning (tuning.py)
replaces all of this per workload.
"""

from __future__ import annotations

from tvm import s_tir, tirx

LANES = 16  # 512-bit vectors of 32-bit lanes (8 for 64-bit lanes still divides evenly)
PARALLEL_MIN = 1 << 14  # iterations below which a thread pool costs more than it saves
TILE_ROWS, TILE_COLS, TILE_K = 6, 32, 4  # measured best of a small sweep at 1024^3 (f32)
KEEP = ("pack", "vnni_pack", "quantized")  # blocks whose buffers a later block must read
APART = ("regroup",)  # a matmul's consumers that read it in another index order (conv's
# output from its (image, group, row, position) product): never placed in the tile
# a u8 x s8 tile: 8 rows x 2 blocks of 16 columns (16 accumulators); measured at 512^3 on
# one thread against 8 x 1 (the previous tile), 8 x 3, 4 x 4 and 6 x 4: 0.63 ms against
# 0.67-0.77 ms
VNNI_ROWS, VNNI_BLOCKS = 8, 2


def default(func: tirx.PrimFunc):
    """An IRModule with the default schedule applied to a TE-built PrimFunc."""
    sch = s_tir.Schedule(func)
    try:
        sch.get_sblock("root")
    except s_tir.ScheduleError:
        return sch.mod  # one extern kernel alone (topi's cumsum, argsort): its loops are set
    _inline(sch)
    placed: set[str] = set()  # epilogues already computed inside a matmul tile
    for block in _blocks(sch):
        name = sch.get(block).name_hint
        if _empty(sch, block):
            continue  # a loop of extent 0: nothing runs, nothing to schedule
        if name == "matmul":
            placed |= _tile_matmul(sch, block)
        elif name == "vnni_matmul":
            _tensorize_vnni(sch, block)
        elif name == "colsum":
            _column_sum(sch, block)
        elif name == "vnni_pack":
            _vnni_pack(sch, block)
        elif name in placed or _empty(sch, block):
            continue
        elif _reduces(sch, block):
            _reduction(sch, block)
        else:
            _spatial(sch, block)
    return sch.mod


def _blocks(sch: s_tir.Schedule) -> list:
    return list(sch.get_child_blocks(sch.get_sblock("root")))


def _find(sch: s_tir.Schedule, name: str):
    for block in _blocks(sch):
        if sch.get(block).name_hint == name:
            return block
    return None


def _empty(sch: s_tir.Schedule, block) -> bool:
    return any(_extent(sch, lp) == 0 for lp in sch.get_loops(block))


def _reduces(sch: s_tir.Schedule, block) -> bool:
    return any(v.iter_type != tirx.IterVar.DataPar for v in sch.get(block).iter_vars)


def _inline(sch: s_tir.Schedule) -> None:
    """Inline every elementwise intermediate (not an output) into its consumers."""
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(sch.get_sblock("root"))}
    for block in reversed(_blocks(sch)):
        name = sch.get(block).name_hint
        if name in outputs or name in KEEP or _reduces(sch, block):
            continue
        try:
            sch.compute_inline(block)
        except s_tir.ScheduleError:
            pass  # e.g. a producer read by a reduction's init: it stays a loop nest


def _extent(sch: s_tir.Schedule, loop) -> int | None:
    extent = sch.get(loop).extent
    return int(extent) if isinstance(extent, tirx.IntImm) else None


def _spatial(sch: s_tir.Schedule, block) -> None:
    """Fuse all loops, vectorise the inner LANES, parallelise the rest when it is large."""
    loops = sch.get_loops(block)
    if not loops:
        return
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    extent = _extent(sch, fused) or 0
    if extent >= 2 * LANES:
        outer, inner = sch.split(fused, [None, LANES])
        _try(sch.vectorize, inner)
        if extent >= PARALLEL_MIN:
            sch.parallel(outer)
    elif extent >= PARALLEL_MIN:
        sch.parallel(fused)


def _reduction(sch: s_tir.Schedule, block) -> None:
    """Parallelise the fused spatial loops of a reduction; its reduce loops stay serial."""
    loops = sch.get_loops(block)
    total = 1
    for lp in loops:
        total *= _extent(sch, lp) or 1
    spatial = [lp for lp, v in zip(loops, sch.get(block).iter_vars)
               if v.iter_type == tirx.IterVar.DataPar]
    if not spatial or total < PARALLEL_MIN:
        return
    outer = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
    if (_extent(sch, outer) or 0) >= 2:
        sch.parallel(outer)


def _vnni_pack(sch: s_tir.Schedule, block) -> None:
    """The [N/16, K/4, 16, 4] weight: each 16 x 4 block a fully unrolled transpose (LLVM
    turns it into shuffles; 512 x 512 measured 0.15 -> 0.03 ms against the fused, strided
    loop, and against vectorising the 16 columns)."""
    jo, ko, ji, ki = sch.get_loops(block)
    sch.unroll(ji)
    sch.unroll(ki)
    outer = sch.fuse(jo, ko)
    if (_extent(sch, outer) or 0) * 64 >= PARALLEL_MIN:
        sch.parallel(outer)


def _column_sum(sch: s_tir.Schedule, block) -> None:
    """Sums down the columns of a row-major matrix: rows outside, the columns a vector
    accumulated row by row (not a strided scalar loop per column)."""
    j, r = sch.get_loops(block)
    sch.reorder(r, j)
    sch.decompose_reduction(block, r)
    if (_extent(sch, j) or 0) % LANES == 0:
        _, ji = sch.split(j, [None, LANES])
        _try(sch.vectorize, ji)


def _tile_matmul(sch: s_tir.Schedule, block) -> set[str]:
    """Register-tile a (batched) matmul over a packed weight; epilogues that read only the
    tile run per tile. Returns the names of the epilogues placed in the tile."""
    pack = _find(sch, "pack")
    if pack is not None:
        ploops = sch.get_loops(pack)
        sch.parallel(sch.fuse(*ploops[:-1]) if len(ploops) > 2 else ploops[0])
        sch.vectorize(ploops[-1])
    *batch, i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, [None, TILE_ROWS])
    jo, ji = sch.split(j, [None, TILE_COLS])
    ko, ki = sch.split(k, [None, TILE_K])
    sch.reorder(*batch, jo, io, ko, ki, ii, ji)
    placed = set()
    for consumer in sch.get_consumers(block):
        if sch.get(consumer).name_hint in APART:
            continue
        try:
            sch.reverse_compute_at(consumer, io)
        except s_tir.ScheduleError:
            continue  # it also reads other blocks' results: it stays a loop nest of its own
        placed.add(sch.get(consumer).name_hint)
        _try(sch.vectorize, sch.get_loops(consumer)[-1])
    sch.parallel(sch.fuse(*batch, jo, io))
    sch.unroll(ii)
    sch.vectorize(ji)
    init = sch.decompose_reduction(block, ko)
    _try(sch.vectorize, sch.get_loops(init)[-1])
    return placed


def _tensorize_vnni(sch: s_tir.Schedule, block) -> None:
    """A u8 x s8 product over a [N/16, K/4, 16, 4] weight: each 16 x 4 step one vpdpbusd,
    a register tile of rows x (blocks of 16 columns) accumulated along k."""
    from .tuning import VNNI_INTRIN, prepare

    prepare()
    i, j, k = sch.get_loops(block)
    rows = _extent(sch, i) or 1
    tile = next(t for t in (VNNI_ROWS, 4, 2, 1) if rows % t == 0)  # a partial tile would
    io, ii = sch.split(i, [None, tile])  # put a predicate on the block, which tensorize refuses
    col_blocks = (_extent(sch, j) or 16) // 16
    blocks = next(b for b in (VNNI_BLOCKS, 2, 1) if col_blocks % b == 0)
    jo, jb, ji = sch.split(j, [None, blocks, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(io, jo, ko, ii, jb, ji, ki)
    outer = sch.fuse(io, jo)
    if (_extent(sch, outer) or 0) * (_extent(sch, ko) or 1) >= PARALLEL_MIN // (16 * blocks):
        sch.parallel(outer)  # before tensorize: a tensorized block no longer qualifies
    sch.unroll(ii)
    sch.unroll(jb)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ji, VNNI_INTRIN)


def _try(primitive, loop) -> None:
    """Apply a schedule primitive that may not apply (e.g. vectorising a guarded loop)."""
    try:
        primitive(loop)
    except s_tir.ScheduleError:
        pass
