//! Views: how a logical shape maps onto a flat buffer. Every movement op (reshape, permute, expand,
//! pad, shrink) is a change of view and copies nothing.
//!
//! An element at multi-index `i` lives at `offset + Σ i[d]·strides[d]`, unless `mask` is present and
//! `i[d]` falls outside `mask[d]` for some `d`, in which case it reads as `0.0` (padding).

use std::cell::RefCell;
use std::hash::{BuildHasher, BuildHasherDefault, Hash};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::thread::LocalKey;

use super::axes::AxisVec;
use super::fast_hash::FastHasher;
use crate::shape::runtime::{numel, write_contiguous_strides};

/// A strided, optionally masked window onto a flat buffer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct View(Arc<ViewData>);

/// The fields of a [`View`], shared behind an `Arc` so cloning a view (and so a `LazyBuffer`)
/// allocates nothing; a movement op copies them once. Axes are held inline up to rank 6, so a new
/// view is one allocation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ViewData {
    shape: AxisVec<usize>,
    strides: AxisVec<isize>,
    offset: isize,
    /// Rare (only padded views have one), so kept out of line.
    mask: Option<Box<[(usize, usize)]>>,
}

impl Deref for View {
    type Target = ViewData;
    fn deref(&self) -> &ViewData {
        &self.0
    }
}

impl DerefMut for View {
    /// Copy-on-write: only a view being changed gets its own fields.
    fn deref_mut(&mut self) -> &mut ViewData {
        Arc::make_mut(&mut self.0)
    }
}

/// The last view made in each of 64 slots, by a hash of what it was made from.
type RecentViews = RefCell<[Option<View>; 64]>;

/// The view in `key`'s slot of `slots` if `is` says it is the one `key` describes; otherwise one
/// `make` makes from `key`, which takes the slot.
fn recent<K: Hash>(
    slots: &'static LocalKey<RecentViews>,
    key: K,
    is: impl Fn(&View, &K) -> bool,
    make: impl FnOnce(K) -> View,
) -> View {
    let slot = BuildHasherDefault::<FastHasher>::default().hash_one(&key) as usize % 64;
    let hit = slots.try_with(|recent| recent.borrow()[slot].as_ref().filter(|v| is(v, &key)).cloned());
    if let Ok(Some(view)) = hit {
        return view;
    }
    let view = make(key);
    // A thread being torn down keeps nothing.
    let _ = slots.try_with(|recent| recent.borrow_mut()[slot] = Some(view.clone()));
    view
}

/// Row-major strides of `shape`, without allocating.
fn row_major(shape: &[usize]) -> AxisVec<isize> {
    let mut strides = AxisVec::filled(shape.len(), 0isize);
    write_contiguous_strides(shape, &mut strides);
    strides
}

impl View {
    /// The row-major view of a fresh buffer of `shape`.
    ///
    /// Every new node gets one, and a training step's shapes recur, so each thread keeps the
    /// last view it made in each of 64 slots (by a hash of the shape) and hands out shared copies
    /// of it: 47 of a small training step's 308 allocations were these views. A shared view is
    /// copied before it is changed (see `DerefMut`).
    pub fn contiguous(shape: &[usize]) -> Self {
        thread_local! {
            static CONTIGUOUS: RecentViews = const { RefCell::new([const { None }; 64]) };
        }
        let fresh = |shape: &[usize]| {
            View(Arc::new(ViewData {
                shape: AxisVec::from_slice(shape),
                strides: row_major(shape),
                offset: 0,
                mask: None,
            }))
        };
        recent(&CONTIGUOUS, shape, |view, shape| view.shape() == *shape, fresh)
    }

    /// A view of these fields, shared with an equal one this thread made recently. Movement ops
    /// (permute, expand, reshape) make their views here: a training step transposes and
    /// broadcasts the same views every step, and 25 of a 64→128→10 step's 151 allocations were
    /// such views.
    fn shared(fields: ViewData) -> Self {
        thread_local! {
            static MOVED: RecentViews = const { RefCell::new([const { None }; 64]) };
        }
        recent(
            &MOVED,
            fields,
            |view, fields| *view.0 == *fields,
            |fields| View(Arc::new(fields)),
        )
    }

    /// The logical shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The stride of each axis, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// The buffer position of the element at index zero.
    pub fn offset(&self) -> isize {
        self.offset
    }

    /// The valid range of each axis, if the view is padded.
    pub fn mask(&self) -> Option<&[(usize, usize)]> {
        self.mask.as_deref()
    }

    /// The number of logical elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// True if element `i` of the view is element `i` of the buffer.
    pub fn is_contiguous(&self) -> bool {
        self.offset == 0 && self.mask.is_none() && self.has_contiguous_strides()
    }

    /// True if the strides are row-major for the shape (size-1 axes may have any stride).
    pub fn has_contiguous_strides(&self) -> bool {
        // Row-major strides computed innermost first, without allocating (this runs per kernel
        // leaf and per read).
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d > 1 && s != expected {
                return false;
            }
            expected = expected.saturating_mul(d.max(1) as isize);
        }
        true
    }

    /// If row-major element `i` sits at `offset + i % period` for some `period` (inner axes
    /// row-major over `period` values, outer axes broadcast, no mask), the least such period: 1
    /// for one value everywhere, the element count for a contiguous view. A bias broadcast over a
    /// batch repeats with the period of one row.
    pub fn repeating_period(&self) -> Option<usize> {
        if self.mask.is_some() {
            return None;
        }
        // Inner axes laid out row-major...
        let (mut inner, mut period) = (self.shape.len(), 1usize);
        while inner > 0 {
            let (d, s) = (self.shape[inner - 1], self.strides[inner - 1]);
            if d > 1 && s != period as isize {
                break;
            }
            period *= d.max(1);
            inner -= 1;
        }
        // ...and every outer axis broadcast.
        (0..inner)
            .all(|a| self.shape[a] <= 1 || self.strides[a] == 0)
            .then_some(period)
    }

    /// If every unmasked element sits at `offset + linear_index * step` for one `step`, that step.
    fn linear_step(&self) -> Option<isize> {
        if self.mask.is_some() {
            return None;
        }
        let cstrides = row_major(&self.shape);
        let mut step = None;
        for ((&d, &s), &c) in self.shape.iter().zip(&self.strides).zip(&cstrides) {
            if d <= 1 {
                continue;
            }
            if s % c != 0 {
                return None;
            }
            match step {
                None => step = Some(s / c),
                Some(k) if k * c == s => {}
                Some(_) => return None,
            }
        }
        Some(step.unwrap_or(0))
    }

    /// The buffer position of the element at `index`, or `None` where the mask hides it.
    pub fn position(&self, index: &[usize]) -> Option<isize> {
        if let Some(mask) = &self.mask
            && index.iter().zip(mask).any(|(&i, &(lo, hi))| i < lo || i >= hi)
        {
            return None;
        }
        Some(
            self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(&i, &s)| i as isize * s)
                    .sum::<isize>(),
        )
    }

    /// Every element's buffer position, in logical row-major order (`None` for padding): the
    /// obviously correct reading that tests compare faster ones with.
    #[cfg(test)]
    pub(crate) fn positions(&self) -> Vec<Option<isize>> {
        let shape = self.shape();
        let mut index = vec![0usize; shape.len()];
        (0..self.numel())
            .map(|_| {
                let position = self.position(&index);
                for d in (0..shape.len()).rev() {
                    index[d] += 1;
                    if index[d] < shape[d] {
                        break;
                    }
                    index[d] = 0;
                }
                position
            })
            .collect()
    }

    /// The lowest and one-past-highest buffer positions any unmasked element touches, or `None` if
    /// the view shows no element of the buffer.
    pub fn extent(&self) -> Option<(isize, isize)> {
        let (mut lo, mut hi) = (self.offset, self.offset);
        for d in 0..self.shape.len() {
            let (first, end) = match &self.mask {
                Some(mask) => mask[d],
                None => (0, self.shape[d]),
            };
            if first >= end {
                return None;
            }
            let (a, b) = (
                first as isize * self.strides[d],
                (end - 1) as isize * self.strides[d],
            );
            lo += a.min(b);
            hi += a.max(b);
        }
        Some((lo, hi + 1))
    }

    /// The same shape and mask over a single element (all strides 0, offset 0): read from a
    /// one-element buffer it is that element inside the mask and 0 in the padding.
    pub(crate) fn mask_only(&self) -> Self {
        View(Arc::new(ViewData {
            shape: self.shape.clone(),
            strides: AxisVec::filled(self.shape.len(), 0),
            offset: 0,
            mask: self.mask.clone(),
        }))
    }

    /// Reorders the axes: axis `d` of the result is axis `order[d]` of `self`.
    pub fn permute(&self, order: &[usize]) -> Self {
        View::shared(ViewData {
            shape: order.iter().map(|&a| self.shape[a]).collect(),
            strides: order.iter().map(|&a| self.strides[a]).collect(),
            offset: self.offset,
            mask: self.mask.as_ref().map(|m| order.iter().map(|&a| m[a]).collect()),
        })
    }

    /// Whether this is `View::contiguous(shape)` with its last two axes swapped (compared field
    /// by field, without making that view).
    pub(crate) fn is_transposed_contiguous(&self, shape: &[usize]) -> bool {
        let rank = shape.len();
        let swapped = |d: usize| match rank - d {
            1 => d - 1,
            2 => d + 1,
            _ => d,
        };
        let strides = row_major(shape);
        rank >= 2
            && self.offset == 0
            && self.mask.is_none()
            && self.shape.len() == rank
            && (0..rank).all(|d| self.shape[d] == shape[swapped(d)] && self.strides[d] == strides[swapped(d)])
    }

    /// Broadcasts size-1 axes, and missing leading axes, to `shape` by giving them stride 0.
    ///
    /// Panics if `shape` has fewer axes; the other axes must be equal or 1 here (checked in
    /// debug builds: [`LazyBuffer::expand`](super::LazyBuffer::expand) checks them always).
    pub fn expand(&self, shape: &[usize]) -> Self {
        let lift = (shape.len().checked_sub(self.shape.len()))
            .unwrap_or_else(|| panic!("expand {:?} to {shape:?}: the target has fewer axes", self.shape));
        debug_assert!(
            (self.shape.iter().zip(&shape[lift..])).all(|(&from, &to)| from == to || from == 1),
            "expand {:?} to {shape:?}",
            self.shape
        );
        let mut strides = AxisVec::filled(shape.len(), 0isize);
        for (d, (&from, &to)) in self.shape.iter().zip(&shape[lift..]).enumerate() {
            if from == to {
                strides[lift + d] = self.strides[d];
            }
        }
        // A lifted axis is a valid size-1 axis; an expanded one repeats its single position,
        // which is either valid everywhere or nowhere.
        let mask = self.mask.as_ref().map(|mask| {
            let expanded = |d: usize, to: usize| match mask[d] {
                _ if self.shape[d] == to => mask[d],
                (0, 1) => (0, to),
                _ => (0, 0),
            };
            (0..shape.len())
                .map(|a| {
                    if a < lift {
                        (0, shape[a])
                    } else {
                        expanded(a - lift, shape[a])
                    }
                })
                .collect()
        });
        View::shared(ViewData {
            shape: AxisVec::from_slice(shape),
            strides,
            offset: self.offset,
            mask,
        })
    }

    /// Keeps `ranges[d]` of each axis.
    pub fn shrink(&self, ranges: &[(usize, usize)]) -> Self {
        let mut out = self.clone();
        for (d, &(start, end)) in ranges.iter().enumerate() {
            debug_assert!(start <= end && end <= self.shape[d]);
            out.offset += start as isize * self.strides[d];
            out.shape[d] = end - start;
            if let Some(mask) = &mut out.mask {
                let (lo, hi) = mask[d];
                let lo = lo.clamp(start, end) - start;
                let hi = hi.clamp(start, end) - start;
                mask[d] = (lo, hi.max(lo));
            }
        }
        out.drop_full_mask();
        out
    }

    /// Adds `pads[d] = (before, after)` zeros around each axis.
    pub fn pad(&self, pads: &[(usize, usize)]) -> Self {
        let mut out = self.clone();
        let mut mask = out
            .mask
            .take()
            .unwrap_or_else(|| self.shape.iter().map(|&d| (0, d)).collect());
        for (d, &(before, after)) in pads.iter().enumerate() {
            out.offset -= before as isize * self.strides[d];
            out.shape[d] = self.shape[d] + before + after;
            mask[d] = (mask[d].0 + before, mask[d].1 + before);
        }
        out.mask = Some(mask);
        out.drop_full_mask();
        out
    }

    fn drop_full_mask(&mut self) {
        if let Some(mask) = &self.mask
            && mask
                .iter()
                .zip(&self.shape)
                .all(|(&(lo, hi), &d)| lo == 0 && hi == d)
        {
            self.mask = None;
        }
    }

    /// The same elements seen as `shape`, if that needs no copy. `None` means the caller must first
    /// make the data contiguous.
    pub fn reshape(&self, shape: &[usize]) -> Option<Self> {
        debug_assert_eq!(numel(shape), self.numel());
        if *self.shape == *shape {
            return Some(self.clone());
        }
        if self.numel() == 0 {
            return Some(View::contiguous(shape));
        }
        if let Some(mask) = &self.mask {
            return self.reshape_unit_axes(mask, shape);
        }
        if let Some(step) = self.linear_step() {
            if (step, self.offset) == (1, 0) {
                return Some(View::contiguous(shape));
            }
            let mut strides = row_major(shape);
            strides.iter_mut().for_each(|s| *s *= step);
            return Some(View::shared(ViewData {
                shape: AxisVec::from_slice(shape),
                strides,
                offset: self.offset,
                mask: None,
            }));
        }
        self.reshape_strided(shape)
    }

    /// Reshape of a masked view that only adds or removes size-1 axes.
    fn reshape_unit_axes(&self, mask: &[(usize, usize)], shape: &[usize]) -> Option<Self> {
        let kept_old: Vec<usize> = (0..self.shape.len()).filter(|&d| self.shape[d] != 1).collect();
        let kept_new: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        let same = kept_old.len() == kept_new.len()
            && kept_old
                .iter()
                .zip(&kept_new)
                .all(|(&o, &n)| self.shape[o] == shape[n]);
        if !same {
            return None;
        }
        // A removed size-1 axis must show its element, or the whole view would be empty.
        if (0..self.shape.len()).any(|d| self.shape[d] == 1 && mask[d] != (0, 1)) {
            return None;
        }
        let mut out = View(Arc::new(ViewData {
            shape: AxisVec::from_slice(shape),
            strides: AxisVec::filled(shape.len(), 0),
            offset: self.offset,
            mask: Some(vec![(0, 1); shape.len()].into_boxed_slice()),
        }));
        for (&o, &n) in kept_old.iter().zip(&kept_new) {
            out.strides[n] = self.strides[o];
            out.mask.as_mut().unwrap()[n] = mask[o];
        }
        Some(out)
    }

    /// numpy's no-copy reshape: groups old axes and new axes into chunks of equal element count;
    /// each chunk of old axes must be mergeable (row-major strides within it).
    fn reshape_strided(&self, shape: &[usize]) -> Option<Self> {
        let old: Vec<(usize, isize)> = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(d, _)| **d != 1)
            .map(|(&d, &s)| (d, s))
            .collect();
        let mut strides = AxisVec::filled(shape.len(), 0isize);
        let (mut oi, mut ni) = (0, 0);
        while oi < old.len() && ni < shape.len() {
            if shape[ni] == 1 {
                ni += 1;
                continue;
            }
            let (o_start, n_start) = (oi, ni);
            let (mut o_count, mut n_count) = (old[oi].0, shape[ni]);
            while o_count != n_count {
                if o_count < n_count {
                    oi += 1;
                    o_count *= old.get(oi)?.0;
                } else {
                    ni += 1;
                    n_count *= *shape.get(ni)?;
                }
            }
            for k in o_start..oi {
                if old[k].1 != old[k + 1].1 * old[k + 1].0 as isize {
                    return None;
                }
            }
            // Strides of the new chunk: row-major, ending in the chunk's innermost old stride.
            let mut stride = old[oi].1;
            for k in (n_start..=ni).rev() {
                strides[k] = stride;
                stride *= shape[k] as isize;
            }
            oi += 1;
            ni += 1;
        }
        Some(View::shared(ViewData {
            shape: AxisVec::from_slice(shape),
            strides,
            offset: self.offset,
            mask: None,
        }))
    }

    /// The view `outer ∘ self`: `outer` looks at the row-major layout of `self`'s shape, and `self`
    /// maps that onto a buffer. `None` when the result is not a single strided view.
    pub fn compose(outer: &View, inner: &View) -> Option<View> {
        if outer.numel() == 0 {
            // Shows nothing, so any view of its shape will do (and `outer` need not hold as many
            // elements as `inner`: an empty view reshapes to a contiguous one).
            return Some(View::contiguous(&outer.shape));
        }
        // A contiguous `outer` may still be a prefix of `inner` (a shrink keeping the first rows).
        if outer.is_contiguous() && outer.numel() == inner.numel() {
            return if outer.shape == inner.shape {
                Some(inner.clone())
            } else {
                inner.reshape(&outer.shape)
            };
        }
        if let Some(step) = inner.linear_step() {
            return Some(View(Arc::new(ViewData {
                shape: outer.shape.clone(),
                strides: outer.strides.iter().map(|s| s * step).collect(),
                offset: inner.offset + outer.offset * step,
                mask: outer.mask.clone(),
            })));
        }
        Self::compose_axiswise(outer, inner)
    }

    /// Composition when `outer` is a permutation and/or broadcast of `inner`'s axes.
    fn compose_axiswise(outer: &View, inner: &View) -> Option<View> {
        if outer.offset != 0 || outer.mask.is_some() {
            return None;
        }
        let cstrides = row_major(&inner.shape);
        let mut used = vec![false; inner.shape.len()];
        let mut out = View(Arc::new(ViewData {
            shape: outer.shape.clone(),
            strides: AxisVec::filled(outer.shape.len(), 0),
            offset: inner.offset,
            mask: None,
        }));
        let mut mask = Vec::new();
        for d in 0..outer.shape.len() {
            let mut source = None;
            if outer.shape[d] > 1 && outer.strides[d] != 0 {
                let j = (0..inner.shape.len()).find(|&j| {
                    !used[j] && inner.shape[j] == outer.shape[d] && cstrides[j] == outer.strides[d]
                })?;
                used[j] = true;
                out.strides[d] = inner.strides[j];
                source = Some(j);
            }
            if let Some(inner_mask) = &inner.mask {
                mask.push(match source {
                    Some(j) => inner_mask[j],
                    None => (0, outer.shape[d]),
                });
            }
        }
        let covered = (0..inner.shape.len()).all(|j| used[j] || inner.shape[j] == 1);
        let unit_axes_visible = inner
            .mask
            .as_ref()
            .is_none_or(|m| (0..inner.shape.len()).all(|j| used[j] || m[j] == (0, 1) || inner.shape[j] == 0));
        if inner.mask.is_some() {
            out.mask = Some(mask.into_boxed_slice());
        }
        (covered && unit_axes_visible).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_contiguous_is_the_swap_of_the_last_two_axes() {
        // Against its definition, over ranks 0 to 4 and every permutation, with size-1 axes
        // (whose row-major strides the check must match exactly), an offset and a mask.
        let shapes: [&[usize]; 6] = [&[], &[3], &[2, 3], &[1, 3], &[2, 1, 4], &[2, 3, 1, 5]];
        for shape in shapes {
            let rank = shape.len();
            let mut swap: Vec<usize> = (0..rank).collect();
            if rank >= 2 {
                swap.swap(rank - 2, rank - 1);
            }
            let transposed = View::contiguous(shape).permute(&swap);
            for order in permutations(rank) {
                let view = View::contiguous(shape).permute(&order);
                let want = rank >= 2 && view == transposed;
                assert_eq!(view.is_transposed_contiguous(shape), want, "{shape:?} {order:?}");
            }
            if rank >= 2 {
                assert!(transposed.is_transposed_contiguous(shape));
                let full_mask = transposed.shape().iter().map(|&d| (0, d)).collect();
                let masked = View(Arc::new(ViewData {
                    mask: Some(full_mask),
                    ..(*transposed).clone()
                }));
                assert!(!masked.is_transposed_contiguous(shape), "{shape:?} masked");
                let other: Vec<usize> = shape.iter().map(|&d| d + 1).collect();
                assert!(
                    !transposed.is_transposed_contiguous(&other),
                    "{shape:?} other shape"
                );
            }
        }
        let shifted = View::contiguous(&[4, 3])
            .shrink(&[(1, 3), (0, 3)])
            .permute(&[1, 0]);
        assert!(!shifted.is_transposed_contiguous(&[2, 3]), "an offset");
    }

    fn permutations(rank: usize) -> Vec<Vec<usize>> {
        if rank == 0 {
            return vec![vec![]];
        }
        let mut all = Vec::new();
        for rest in permutations(rank - 1) {
            for at in 0..=rest.len() {
                let mut order = rest.clone();
                order.insert(at, rank - 1);
                all.push(order);
            }
        }
        all
    }

    #[test]
    fn permute_then_reshape_needs_a_copy() {
        let v = View::contiguous(&[2, 3]).permute(&[1, 0]);
        assert_eq!(v.strides(), &[1, 3]);
        assert!(v.reshape(&[6]).is_none());
        assert!(v.reshape(&[2, 3]).is_none());
        assert!(
            v.reshape(&[3, 1, 2]).is_some(),
            "adding a unit axis needs no copy"
        );
    }

    #[test]
    fn repeating_period_matches_the_positions() {
        let row = View::contiguous(&[1, 4]);
        let cases = [
            (row.expand(&[3, 4]), Some(4)),                          // a bias over a batch
            (View::contiguous(&[4]).expand(&[2, 3, 4]), Some(4)),    // lifted and broadcast twice
            (View::contiguous(&[1]).expand(&[5, 2]), Some(1)),       // one value
            (View::contiguous(&[2, 3]), Some(6)),                    // contiguous
            (View::contiguous(&[3, 1]).expand(&[3, 2]), None),       // a column: repeats within rows
            (View::contiguous(&[2, 3]).permute(&[1, 0]), None),      // transposed
            (View::contiguous(&[8]).shrink(&[(1, 5)]), Some(4)),     // offset
            (View::contiguous(&[3]).pad(&[(1, 0)]), None),           // masked
            (View::contiguous(&[2, 1, 4]).expand(&[2, 3, 4]), None), // broadcast between
        ];
        for (view, want) in cases {
            assert_eq!(view.repeating_period(), want, "{view:?}");
            if let Some(p) = want {
                for (i, pos) in view.positions().into_iter().enumerate() {
                    assert_eq!(pos, Some(view.offset() + (i % p) as isize), "{view:?} at {i}");
                }
            }
        }
    }

    #[test]
    fn reshape_of_contiguous_and_split_axes() {
        let v = View::contiguous(&[4, 6]);
        let r = v.reshape(&[2, 2, 3, 2]).unwrap();
        assert_eq!(r.strides(), &[12, 6, 2, 1]);
        // A shrunk row block keeps row stride: [4,6] -> rows 1..3 -> reshape [2,2,3]
        let s = v.shrink(&[(1, 3), (0, 6)]);
        let r = s.reshape(&[2, 2, 3]).unwrap();
        assert_eq!(r.positions(), s.positions());
        // Columns 0..3 of each row are not mergeable across rows.
        assert!(v.shrink(&[(0, 4), (0, 3)]).reshape(&[12]).is_none());
    }

    #[test]
    fn contiguous_views_are_shared_and_copied_before_a_change() {
        let a = View::contiguous(&[2, 3]);
        assert!(
            Arc::ptr_eq(&a.0, &View::contiguous(&[2, 3]).0),
            "a recent shape is shared"
        );
        // shrink and pad change a copy of the fields (DerefMut), never the shared ones.
        let shrunk = a.shrink(&[(1, 2), (0, 3)]);
        let padded = a.pad(&[(1, 0), (0, 1)]);
        assert_eq!((shrunk.offset(), shrunk.shape()), (3, &[1, 3][..]));
        assert_eq!(padded.shape(), &[3, 4]);
        let again = View::contiguous(&[2, 3]);
        assert!(again.is_contiguous() && again.shape() == [2, 3] && again.mask().is_none());
        // A reshape of a row-major view from position 0 is the shared view of its new shape;
        // one from elsewhere, or stepping over values, is a changed copy.
        let reshaped = View::contiguous(&[6]).reshape(&[3, 2]).unwrap();
        assert!(Arc::ptr_eq(&reshaped.0, &View::contiguous(&[3, 2]).0));
        let from_row_1 = a.shrink(&[(1, 2), (0, 3)]).reshape(&[3]).unwrap();
        assert_eq!((from_row_1.offset(), from_row_1.strides()), (3, &[1][..]));
        let every_other = View::contiguous(&[2, 4])
            .shrink(&[(0, 2), (0, 1)])
            .reshape(&[2])
            .unwrap();
        assert_eq!((every_other.offset(), every_other.strides()), (0, &[4][..]));
        assert_eq!(
            View::contiguous(&[3, 2]).strides(),
            &[2, 1],
            "the shared view is unchanged"
        );
        // A movement op's view is shared with the equal one made before it; a changed one is a
        // copy, and other views are their own.
        let t = a.permute(&[1, 0]);
        assert!(Arc::ptr_eq(&t.0, &a.permute(&[1, 0]).0));
        let wide = View::contiguous(&[1, 3]).expand(&[4, 3]);
        assert!(Arc::ptr_eq(&wide.0, &View::contiguous(&[1, 3]).expand(&[4, 3]).0));
        assert!(!Arc::ptr_eq(
            &wide.0,
            &View::contiguous(&[1, 3]).expand(&[5, 3]).0
        ));
        let shrunk_t = t.shrink(&[(1, 3), (0, 2)]);
        assert_eq!((shrunk_t.offset(), t.offset(), t.shape()), (1, 0, &[3, 2][..]));
        // Shapes of any rank still get their own row-major strides.
        for shape in [&[][..], &[0], &[5], &[3, 1, 4], &[2, 2, 2, 2, 2, 2, 2]] {
            let v = View::contiguous(shape);
            assert_eq!(v.shape(), shape);
            assert!(v.is_contiguous());
        }
    }

    #[test]
    fn pad_and_shrink_masks() {
        let v = View::contiguous(&[3]).pad(&[(1, 2)]);
        assert_eq!(v.shape(), &[6]);
        assert_eq!(v.positions(), vec![None, Some(0), Some(1), Some(2), None, None]);
        let back = v.shrink(&[(1, 4)]);
        assert_eq!(back, View::contiguous(&[3]), "unpadding removes the mask");
        let edge = v.shrink(&[(0, 2)]);
        assert_eq!(edge.positions(), vec![None, Some(0)]);
    }

    #[test]
    fn expand_gives_zero_strides() {
        let v = View::contiguous(&[3, 1]).expand(&[3, 4]);
        assert_eq!(v.strides(), &[1, 0]);
        assert_eq!(v.extent(), Some((0, 3)));
    }

    /// Every element of an expanded view is the element of the source at the same index with
    /// broadcast axes at 0, and lifted axes dropped: including masked (padded) sources, whose
    /// size-1 axes are either valid or padding.
    #[test]
    fn expand_repeats_source_positions_including_masks() {
        let padded = View::contiguous(&[2, 3]).pad(&[(1, 0), (0, 1)]); // [3, 4], row 0 padding
        let sources = [
            View::contiguous(&[3, 1]),
            View::contiguous(&[4]).pad(&[(1, 1)]),
            padded.shrink(&[(0, 1), (0, 4)]), // one padding row
            padded.shrink(&[(1, 2), (0, 4)]), // one valid row
            padded.shrink(&[(2, 3), (3, 4)]), // a padded corner, [1, 1]
        ];
        let targets: [&[usize]; 5] = [&[2, 3, 4], &[3, 6], &[5, 4], &[2, 3, 4], &[2, 2, 3]];
        for (source, target) in sources.iter().zip(targets) {
            let expanded = source.expand(target);
            let lift = target.len() - source.shape().len();
            let source_positions = source.positions();
            let source_strides = row_major(source.shape());
            for (flat, got) in expanded.positions().into_iter().enumerate() {
                let mut rest = flat;
                let mut at = 0isize;
                for (d, &size) in target.iter().enumerate().rev() {
                    let i = rest % size;
                    rest /= size;
                    if d >= lift && source.shape()[d - lift] != 1 {
                        at += i as isize * source_strides[d - lift];
                    }
                }
                let want = source_positions[at as usize];
                assert_eq!(got, want, "{source:?} expanded to {target:?}, element {flat}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "expand [2, 3] to [3]: the target has fewer axes")]
    fn expand_to_fewer_axes_names_both_shapes() {
        View::contiguous(&[2, 3]).expand(&[3]);
    }

    #[test]
    fn empty_views() {
        let v = View::contiguous(&[0, 3]);
        assert_eq!(v.numel(), 0);
        assert_eq!(v.extent(), None);
        assert_eq!(v.reshape(&[3, 0]).unwrap().shape(), &[3, 0]);
    }

    #[test]
    fn compose_matches_positions() {
        let inner = View::contiguous(&[4, 3]).permute(&[1, 0]); // shape [3, 4]
        let outers = [
            View::contiguous(&[3, 4]),
            View::contiguous(&[3, 4]).permute(&[1, 0]),
            View::contiguous(&[3, 1, 4]).expand(&[3, 5, 4]),
            View::contiguous(&[12]).reshape(&[3, 4]).unwrap(),
        ];
        for outer in outers {
            let composed = View::compose(&outer, &inner).expect("composable");
            let inner_positions = inner.positions();
            let expected: Vec<Option<isize>> = outer
                .positions()
                .into_iter()
                .map(|p| p.and_then(|p| inner_positions[p as usize]))
                .collect();
            assert_eq!(composed.positions(), expected, "outer {outer:?}");
        }
    }
}
