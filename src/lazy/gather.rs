//! Reading a view's elements into a row-major block: `gather` for one block at a time, and
//! `gather_tiled` for a whole leaf whose innermost axis strides far through memory.

use std::mem::MaybeUninit;

use super::axes::AxisVec;
use super::kernel::PARALLEL_CHUNK;
use super::storage::Storage;
use super::view::View;
use super::{alloc, parallel};
use crate::shape::runtime::{numel, write_contiguous_strides};
use crate::simd::simd_dispatch;

simd_dispatch! {
    /// Copies elements `start .. start + out.len()` (row-major over `view`'s shape) of `buf` seen
    /// through `view` into `out`; masked elements read as 0.
    ///
    /// Runs once per block and strided leaf, often over short rows (a `[batch, 1]` column
    /// broadcast across 10 classes), so the row's buffer position is kept up to date rather than
    /// recomputed, and rows that are plain copies or one repeated value take a fast path. Compiled
    /// for AVX-512 and AVX2 too: a long repeated value (a row's maximum across 1024 columns) was
    /// filled 16 bytes a store, and the two such leaves of a log_softmax's last kernel took 45 % of
    /// it.
    pub(crate) fn gather(buf: &[f32], view: &View, start: usize, out: &mut [f32]) {
        let shape = view.shape();
        let strides = view.strides();
        let rank = shape.len();
        if out.is_empty() {
            return; // also keeps a zero-size axis from being divided by below
        }
        if rank == 0 {
            if let Some(o) = out.first_mut() {
                *o = view.position(&[]).map_or(0.0, |p| buf[p as usize]);
            }
            return;
        }
        let last = rank - 1;
        // A column repeated along rows (`[batch, 1]` across classes) in one short loop per row,
        // without the general walk's carries and mask checks: the loss's kernels read three.
        if rank == 2 && strides[1] == 0 && view.mask().is_none() {
            let (width, row_stride) = (shape[1], strides[0]);
            let mut row = start / width;
            let mut first = start % width;
            let mut rest = &mut *out;
            // Rows narrower than a vector (a loss's row statistics across 10 classes): each
            // row's value stored as one vector, which the next row's overwrites past its width;
            // a fill per row cost more than the row.
            if width < LANES {
                let value = |row: usize| buf[(view.offset() + row as isize * row_stride) as usize];
                let mut at = 0;
                while at + LANES <= rest.len() {
                    let count = width - first;
                    rest[at..at + LANES].copy_from_slice(&[value(row); LANES]);
                    (at, row, first) = (at + count, row + 1, 0);
                }
                rest = &mut rest[at..];
            }
            while !rest.is_empty() {
                let count = rest.len().min(width - first);
                let (run, more) = rest.split_at_mut(count);
                run.fill(buf[(view.offset() + row as isize * row_stride) as usize]);
                (rest, row, first) = (more, row + 1, 0);
            }
            return;
        }
        // Short rows (a last axis under 16 values): the walk below pays its carries once per
        // row. Where the last axes together hold at most `PLANE` values, take them as one plane
        // through a table of their offsets, and carry once per plane.
        let plane_from = (0..rank).rev().take_while(|&d| shape[d..].iter().product::<usize>() <= PLANE).last();
        if let Some(group) = plane_from.filter(|&g| view.mask().is_none() && shape[last] < 16 && g < last) {
            let width: usize = shape[group..].iter().product();
            let mut offsets = [0isize; PLANE];
            write_offsets(&shape[group..], &strides[group..], &mut offsets[..width]);
            // Where plane `plane` (the index over the axes before the group) starts in `buf`.
            let plane_base = |mut plane: usize| {
                let mut base = view.offset();
                for d in (0..group).rev() {
                    base += (plane % shape[d]) as isize * strides[d];
                    plane /= shape[d];
                }
                base
            };
            let (mut plane, mut at) = (start / width, start % width);
            let mut written = 0;
            while written < out.len() {
                let count = (out.len() - written).min(width - at);
                let base = plane_base(plane);
                for (o, &offset) in out[written..written + count].iter_mut().zip(&offsets[at..at + count]) {
                    *o = buf[(base + offset) as usize];
                }
                (written, at, plane) = (written + count, 0, plane + 1);
            }
            return;
        }
        // Ranks up to 8 keep the index on the stack: a gather runs once per block.
        let (mut small, mut large) = ([0usize; 8], Vec::new());
        let index: &mut [usize] = if rank <= small.len() {
            &mut small[..rank]
        } else {
            large.resize(rank, 0);
            &mut large
        };
        let mut rest = start;
        for d in (0..rank).rev() {
            index[d] = rest % shape[d];
            rest /= shape[d];
        }
        let mask = view.mask();
        let (lo, hi) = mask.map_or((0, shape[last]), |m| m[last]);
        let row_unmasked = lo == 0 && hi == shape[last];
        let stride = strides[last];
        // Buffer position of element `[index[..last], 0]`.
        let mut base = view.offset() + (0..last).map(|d| index[d] as isize * strides[d]).sum::<isize>();
        let mut written = 0;
        while written < out.len() {
            let count = (out.len() - written).min(shape[last] - index[last]);
            let row = &mut out[written..written + count];
            let first = index[last];
            let outer_visible =
                mask.is_none_or(|m| (0..last).all(|d| index[d] >= m[d].0 && index[d] < m[d].1));
            if !outer_visible {
                row.fill(0.0);
            } else if row_unmasked && stride == 1 {
                let from = (base + first as isize) as usize;
                row.copy_from_slice(&buf[from..from + count]);
            } else if row_unmasked && stride == 0 {
                row.fill(buf[base as usize]);
            } else if row_unmasked {
                for (j, o) in row.iter_mut().enumerate() {
                    *o = buf[(base + (first + j) as isize * stride) as usize];
                }
            } else {
                // A padded row: zeros, the visible run `lo..hi` (a plain copy where the stride
                // is 1), zeros. Checking each value against the mask made `exp` of a padded
                // [1024, 1024] take 1.4 ms, four times `exp` of the tensor itself.
                let end = first + count;
                let from = lo.clamp(first, end);
                let to = hi.clamp(from, end);
                let (before, rest) = row.split_at_mut(from - first);
                let (visible, after) = rest.split_at_mut(to - from);
                before.fill(0.0);
                after.fill(0.0);
                if stride == 1 && !visible.is_empty() {
                    let at = (base + from as isize) as usize;
                    visible.copy_from_slice(&buf[at..at + visible.len()]);
                } else {
                    for (i, o) in (from..to).zip(visible) {
                        *o = buf[(base + i as isize * stride) as usize];
                    }
                }
            }
            written += count;
            index[last] += count;
            // Carry into the outer axes, moving `base` along with the index.
            for d in (1..rank).rev() {
                if index[d] < shape[d] {
                    break;
                }
                if d < last {
                    base -= shape[d] as isize * strides[d];
                }
                index[d] = 0;
                index[d - 1] += 1;
                if d - 1 < last {
                    base += strides[d - 1];
                }
            }
        }
    }
}

/// Values per vector store of a repeated row value (an AVX-512 vector).
const LANES: usize = 16;

/// The most values [`gather`] takes as one plane of a view's last axes, through a table of their
/// offsets on the stack.
const PLANE: usize = 256;

/// Writes into `out` (as long as `shape` holds values) where each value of `shape`, row-major,
/// lies from the first, at `strides`.
fn write_offsets(shape: &[usize], strides: &[isize], out: &mut [isize]) {
    debug_assert_eq!(out.len(), numel(shape));
    let Some(first) = out.first_mut() else {
        return;
    };
    *first = 0;
    let mut filled = 1;
    for (&size, &stride) in shape.iter().zip(strides) {
        // Each offset so far, followed along this axis: in place, from the back, so offset `k`
        // is read before anything overwrites it.
        for k in (0..filled).rev() {
            for i in (0..size).rev() {
                out[k * size + i] = out[k] + i as isize * stride;
            }
        }
        filled *= size;
    }
}

/// Side of the square tiles `gather_tiled` copies: 16 values are one cache line. Measured on a
/// [1024, 1024] transpose, 16 beat 8 and 32 (whose 32 lines, 4 KiB apart, share one L1 set).
const TILE: usize = 16;

/// How `gather_tiled` copies a view: in tiles of `TILE` steps along axis `a`, contiguous in the
/// source, by `TILE` values of the trailing axes `group..`, contiguous in the output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tiling {
    a: usize,
    group: usize,
}

/// How to copy `view` in tiles, if it is worth it: it is unmasked, holds 512 values or more, and
/// its innermost axis strides at least a cache line through memory while another axis is
/// contiguous there (a transpose). Element-by-element gathering then touches a new cache line,
/// and often a new page, for every value: a transposed [1024, 1024] read took 14 times as long
/// as a plain one. Small views gain too, the gather's cost per row being most of theirs: `exp`
/// of a transposed [32, 32] took 0.61 of its time, of a [64, 64] 0.46 (16,384 values was the
/// bound before). The output side of a tile is the last axis if it holds a tile's values, or
/// else the fewest trailing axes that do, or those after `a` (whose tiles are then contiguous in
/// the output): a permuted view with a short last axis (an NCHW image batch read as NHWC, whose
/// last axis holds 3) was gathered value by value.
pub(crate) fn tiling(view: &View) -> Option<Tiling> {
    let (shape, strides) = (view.shape(), view.strides());
    let last = shape.len().checked_sub(1)?;
    let far = strides[last].unsigned_abs() >= 16;
    if view.mask().is_some() || !far || numel(shape) < 1 << 9 {
        return None;
    }
    let a = (0..last).find(|&a| strides[a].unsigned_abs() == 1 && shape[a] >= TILE)?;
    // The last axes after `a` holding at least a tile's values, or all of them.
    let mut group = last;
    while group > a + 1 && shape[group..].iter().product::<usize>() < TILE {
        group -= 1;
    }
    // A group of more than one axis is walked through a table of its offsets.
    (group == last || shape[group..].iter().product::<usize>() <= 1 << 16).then_some(Tiling { a, group })
}

/// Values an elementwise kernel's panel of a tiled leaf holds at most (see [`panel_rows`]):
/// 256 KiB, which stay in L2 between the copy that writes them and the blocks that read them.
/// Panels of a transposed [1024, 1024] are 64 of its rows, so each source page a tile reads is
/// read again by the panel's next three tiles; at 16 rows (panels of 64 KiB, as before), every
/// tile read 16 new pages. One thread, against those, medians of 11 pairs: `x + yᵀ` over
/// [1024, 1024] 0.87 of its time, [2048, 512] 0.94; `exp(yᵀ)` 0.92 and 0.91; a row sum of
/// `exp(yᵀ)` 0.83 and 0.92; [512, 2048] and [256, 1024] 0.94–0.99.
const PANEL: usize = 1 << 16;

/// How many rows of its first axis `view` is copied in per panel, if it is larger than a panel
/// and a panel of it fits: as many as [`PANEL`] holds, in whole tiles where the tiles run along
/// that axis. A smaller view is copied whole: the copy stays in L2 anyway, and a panel's buffer,
/// sized afresh by each kernel, cost more (`exp` of a transposed [64, 64] took 1.17 times as
/// long by panels, `x + xᵀ` 1.35).
pub(crate) fn panel_rows(view: &View, tiling: Tiling) -> Option<usize> {
    let shape = view.shape();
    let row: usize = shape[1..].iter().product();
    let rows = (PANEL / row.max(1)).max(1);
    let rows = if tiling.a == 0 {
        (rows / TILE).max(1) * TILE
    } else {
        rows
    };
    (numel(shape) > PANEL && rows * row <= PANEL).then_some(rows)
}

/// Every element of `view` over `buf`, row-major, copied in square tiles (see [`copy_tiled`]).
/// With several threads, each copies a run of the output's first axis. `view` must be unmasked.
pub(crate) fn gather_tiled(buf: &[f32], view: &View, tiling: Tiling) -> Storage {
    let shape = view.shape();
    let n = numel(shape);
    let mut out = alloc::output(n);
    let dst = &mut out.spare_capacity_mut()[..n];
    let threads = parallel::threads();
    if threads == 1 || shape[0] < 2 || n < 2 * PARALLEL_CHUNK {
        copy_tiled(buf, view, tiling, dst);
    } else {
        let rows = shape[0].div_ceil(2 * threads);
        let mut parts: Vec<&mut [MaybeUninit<f32>]> = dst.chunks_mut(rows * (n / shape[0])).collect();
        parallel::for_each_mut(&mut parts, &|i, part| {
            let mut window: AxisVec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
            window[0] = (i * rows, ((i + 1) * rows).min(shape[0]));
            copy_tiled(buf, &view.shrink(&window), tiling, part);
        });
    }
    // SAFETY: `copy_tiled` writes every element of the view it is given, and the parts' views
    // (runs of the first axis) tile `view` as the parts tile the first `n` of the spare capacity.
    unsafe { out.set_len(n) };
    out
}

/// The vector instructions a tile of [`copy_tiled`] is transposed with.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "detected only on x86-64")
)]
enum Transposes {
    Avx512,
    Avx2,
}

impl Transposes {
    /// Writes the transpose of the 16 × 16 block at `src` (rows `src_stride` apart) to `dst`
    /// (rows `dst_stride` apart).
    ///
    /// # Safety
    /// Both blocks lie within their allocations and do not overlap; the CPU has these
    /// instructions.
    unsafe fn transpose(self, src: *const f32, src_stride: isize, dst: *mut f32, dst_stride: usize) {
        // SAFETY: as this function's contract says.
        unsafe {
            match self {
                Transposes::Avx512 => super::small_gemm::transpose_block(src, src_stride, dst, dst_stride),
                Transposes::Avx2 => {
                    super::small_gemm::transpose_block_16_avx2(src, src_stride, dst, dst_stride)
                }
            }
        }
    }
}

/// The widest register transposes this CPU has, if any.
fn transposes_in_registers() -> Option<Transposes> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::small_gemm::avx512() {
            return Some(Transposes::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Transposes::Avx2);
        }
    }
    None
}

/// Writes every element of `view` over `buf` into `dst`, row-major, in tiles of axis `a`
/// (contiguous in `buf`) and the trailing axes from `group` (contiguous in `dst`), so both sides
/// are read and written a cache line at a time. Tiles sweep down `a` within a strip of the
/// trailing axes, so a strip's source lines and pages stay cached while each output line is
/// written whole.
pub(crate) fn copy_tiled(
    buf: &[f32],
    view: &View,
    Tiling { a, group }: Tiling,
    dst: &mut [MaybeUninit<f32>],
) {
    let (shape, strides) = (view.shape(), view.strides());
    let rank = shape.len();
    let last = rank - 1;
    debug_assert_eq!(dst.len(), numel(shape));
    let mut out_strides = AxisVec::filled(rank, 0isize);
    write_contiguous_strides(shape, &mut out_strides);
    // Whole tiles are transposed in registers where axis `a` is contiguous in `buf` and the group
    // is the last axis alone: 16 vector loads, 64 shuffles and 16 stores with AVX-512, where the
    // value-by-value copy took 1.22 ms for a [1024, 1024] transpose; four 8 × 8 blocks with AVX2.
    let registers = (strides[a] == 1 && group == last)
        .then(transposes_in_registers)
        .flatten();
    // Where each of the group's values lies in `buf`, from its first.
    let width: usize = shape[group..].iter().product();
    let mut offsets = Vec::new();
    if group < last {
        offsets.resize(width, 0);
        write_offsets(&shape[group..], &strides[group..], &mut offsets);
    }
    let offset = |z: usize| {
        if group == last {
            z as isize * strides[last]
        } else {
            offsets[z]
        }
    };
    // The other axes, walked by an odometer; each step copies one plane of `a` by the group.
    let others: AxisVec<usize> = (0..group).filter(|&d| d != a).collect();
    let mut index = AxisVec::filled(others.len(), 0usize);
    loop {
        let from = view.offset()
            + (others.iter().zip(&index))
                .map(|(&d, &i)| i as isize * strides[d])
                .sum::<isize>();
        let to = (others.iter().zip(&index))
            .map(|(&d, &i)| i as isize * out_strides[d])
            .sum::<isize>();
        let (from_a, to_a) = (strides[a], out_strides[a]);
        for z0 in (0..width).step_by(TILE) {
            for a0 in (0..shape[a]).step_by(TILE) {
                let whole = z0 + TILE <= width && a0 + TILE <= shape[a];
                if whole && let Some(isa) = registers {
                    // Source row z holds the tile's values along `a` contiguously; output row
                    // i holds them along the last axis.
                    let src = from + z0 as isize * strides[last] + a0 as isize;
                    let to_tile = (to + a0 as isize * to_a) as usize + z0;
                    let (src, dst) = (
                        buf.as_ptr().wrapping_offset(src),
                        dst.as_mut_ptr().wrapping_add(to_tile),
                    );
                    // SAFETY: the tile's 16 × 16 elements are elements of the view, so they
                    // lie in `buf` (`src` is element [a0, z0], rows `strides[last]` apart) and
                    // in `dst` (rows `to_a` apart from `to_tile`); the CPU has `isa`.
                    unsafe { isa.transpose(src, strides[last], dst.cast(), to_a as usize) };
                    continue;
                }
                for i in a0..(a0 + TILE).min(shape[a]) {
                    let row_from = from + i as isize * from_a;
                    let row_to = (to + i as isize * to_a) as usize;
                    for z in z0..(z0 + TILE).min(width) {
                        let value = buf[(row_from + offset(z)) as usize];
                        dst[row_to + z] = MaybeUninit::new(value);
                    }
                }
            }
        }
        // Next plane, or done.
        let Some(d) = (0..index.len()).rev().find(|&d| index[d] + 1 < shape[others[d]]) else {
            break;
        };
        index[d] += 1;
        for later in &mut index[d + 1..] {
            *later = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of `view`, row-major, by `View::position` (0 where masked).
    fn by_position(buf: &[f32], view: &View) -> Vec<f32> {
        (view.positions().iter())
            .map(|p| p.map_or(0.0, |p| buf[p as usize]))
            .collect()
    }

    #[test]
    fn gather_matches_positions_from_any_start() {
        let buf: Vec<f32> = (0..60).map(|i| i as f32 + 1.0).collect();
        let base = View::contiguous(&[3, 4, 5]);
        let views = [
            base.clone(),
            base.permute(&[2, 0, 1]),
            base.shrink(&[(1, 3), (0, 4), (1, 4)]),
            base.pad(&[(1, 0), (0, 2), (2, 1)]),
            base.permute(&[1, 2, 0]).pad(&[(0, 1), (1, 1), (0, 0)]),
            // A column broadcast across rows (stride 0 innermost), and a row broadcast down.
            View::contiguous(&[3, 4, 1]).expand(&[3, 4, 7]),
            View::contiguous(&[1, 1, 5]).expand(&[3, 4, 5]),
            View::contiguous(&[3, 1, 1])
                .expand(&[3, 2, 6])
                .pad(&[(0, 1), (1, 0), (0, 2)]),
            View::contiguous(&[60]),
            // Rank 2 columns repeated along rows (their own path): plain, offset, every other
            // value, and padded (the general walk).
            View::contiguous(&[6, 1]).expand(&[6, 7]),
            View::contiguous(&[12, 1])
                .shrink(&[(2, 10), (0, 1)])
                .expand(&[8, 5]),
            View::contiguous(&[6, 2])
                .shrink(&[(0, 6), (1, 2)])
                .expand(&[6, 4]),
            View::contiguous(&[4, 1]).expand(&[4, 5]).pad(&[(1, 0), (0, 2)]),
            // Narrower than a vector store (each row's store overwritten by the next) and not.
            View::contiguous(&[12, 1]).expand(&[12, 2]),
            View::contiguous(&[12, 1]).expand(&[12, 15]),
            View::contiguous(&[30, 1]).expand(&[30, 16]),
        ];
        for view in &views {
            let want = by_position(&buf, view);
            let n = want.len();
            for start in 0..n {
                for len in [1, 2, 7, n - start] {
                    let len = len.min(n - start);
                    let mut out = vec![f32::NAN; len];
                    gather(&buf, view, start, &mut out);
                    assert_eq!(
                        out,
                        want[start..start + len],
                        "{view:?} from {start}, {len} values"
                    );
                }
            }
        }
    }

    #[test]
    fn tiled_copies_match_positions() {
        // Transposes of 2-d, 3-d and 4-d buffers with sides that are not multiples of the tile,
        // and of a window with an offset.
        let cases: Vec<(Vec<f32>, View)> = vec![
            (ramp(200 * 150), View::contiguous(&[200, 150]).permute(&[1, 0])),
            (
                ramp(3 * 70 * 90),
                View::contiguous(&[3, 70, 90]).permute(&[0, 2, 1]),
            ),
            (
                ramp(3 * 70 * 90),
                View::contiguous(&[3, 70, 90]).permute(&[2, 0, 1]),
            ),
            (
                ramp(40 * 50 * 64),
                View::contiguous(&[40, 50, 64]).permute(&[1, 2, 0]),
            ),
            (
                ramp(300 * 301),
                View::contiguous(&[300, 301])
                    .shrink(&[(5, 290), (1, 300)])
                    .permute(&[1, 0]),
            ),
            (
                ramp(4 * 3 * 40 * 50),
                View::contiguous(&[4, 3, 40, 50]).permute(&[1, 3, 0, 2]),
            ),
            // Short last axes: two that hold a tile's values together, a last axis of 3 right
            // after the contiguous one (NCHW read as NHWC), and two after another axis.
            (
                ramp(2 * 36 * 600),
                View::contiguous(&[2, 36, 600]).permute(&[2, 1, 0]),
            ),
            (
                ramp(4 * 3 * 40 * 40),
                View::contiguous(&[4, 3, 40, 40]).permute(&[0, 2, 3, 1]),
            ),
            (
                ramp(4 * 5 * 50 * 100),
                View::contiguous(&[4, 5, 50, 100]).permute(&[3, 2, 1, 0]),
            ),
        ];
        for (buf, view) in &cases {
            let tiling = tiling(view).unwrap_or_else(|| panic!("{view:?} should be tiled"));
            assert_eq!(
                *gather_tiled(buf, view, tiling),
                by_position(buf, view),
                "{view:?}"
            );
        }
        // Plain, broadcast, small and padded views are gathered block by block instead.
        assert_eq!(tiling(&View::contiguous(&[300, 300])), None);
        assert_eq!(tiling(&View::contiguous(&[300, 1]).expand(&[300, 300])), None);
        assert_eq!(tiling(&View::contiguous(&[16, 16]).permute(&[1, 0])), None);
        assert_eq!(
            tiling(
                &View::contiguous(&[300, 300])
                    .permute(&[1, 0])
                    .pad(&[(1, 1), (0, 0)])
            ),
            None
        );
    }

    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32).collect()
    }
}
