//! A kernel program run over a block a chunk at a time: every instruction on one chunk of values
//! before any on the next. Run one instruction at a time over a whole block, a chain's cheap ops
//! (each bound by its stores) and its transcendental ones (bound by arithmetic) take turns; chunk
//! by chunk, the CPU overlaps them, and the chunk's values stay in L1.
//!
//! Only for programs of several ops. With AVX-512 every op has hand-written lanes here, each
//! bit-identical to its scalar semantics in `ops` (most a few inlined vector instructions; sine
//! and cosine about 60, and pow about 190, out of line). With AVX2 and FMA, the arithmetic,
//! comparisons, selection, `relu`, `exp`, `log`, `sigmoid`, `tanh`, `erf`, `gelu` and `sqrt` have
//! lanes, and a program of only those runs chunk by chunk: the 8-op chain over 1M values took 1.05 ms at best on one thread of an AMD
//! EPYC (Zen 3) core, against 1.52 one instruction at a time over each block (0.78 of its time
//! in 7 alternating runs). Single ops, other programs and other CPUs run one instruction at a
//! time over each block (`kernel`). On either instruction set, an arithmetic op and the next run
//! as one loop where only that one reads its result and is arithmetic, `max`, `min` or a cheap
//! unary op (see [`pairs`]).

#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

#[cfg(target_arch = "x86_64")]
use super::execute::{execute, operands};
use super::kernel::Instr;
use super::ops::{BinaryOp, UnaryOp};

/// Values per chunk: eight vectors, so each instruction still has independent work to overlap,
/// and its dispatch is paid once per eight. The 8-op chain took 0.67 ms per 1M at 128, 0.69 at
/// 256 and 0.72 at 512 (then one chunk per block); rerun with `vsqrtps` in it (mean of 2,500 passes,
/// three runs each), 0.63–0.64 ms at 128, 0.64–0.67 at 256 and 0.69–0.74 at 64.
const CHUNK: usize = 128;

/// `program` ready to run chunk by chunk, if that pays on this CPU: it can, and has
/// instructions to overlap. A single one gains nothing and lost some: `[512, 256] · 2` summed over
/// rows took 0.25 ms chunk by chunk and 0.21 ms one block at a time.
pub(crate) fn if_it_pays(program: &[Instr], leaves: usize) -> Option<Chunked<'_>> {
    (program.len() > 1)
        .then(|| Chunked::new(program, leaves))
        .flatten()
}

/// Whether `program`'s square roots should use `vsqrtps` rather than the estimate refined in
/// [`super::math::sqrt_avx512`]. Both are IEEE square roots, bit for bit, at different costs:
/// `vsqrtps` takes about 11 cycles of the divide unit per vector here, beside the two vector
/// ports; the refined estimate takes ten vector instructions and no divider. With at least three
/// other vector instructions per square root, and nothing else dividing, the divider's time hides
/// behind the ports' work. Measured chunk by chunk over 128K values (in L2), one thread, mean µs
/// per pass in three runs, refined estimate against `vsqrtps`: `sqrt(x·x + y·y)` 41–45 against
/// 36–42, `sqrt(exp(x))·y` 50–52 against 39–44; with two other instructions (`sqrt(x·y + x)`)
/// a tie; but `sqrt(x)·y` 27–29 against 31–34, `sqrt(relu(x))` 23–25 against 30–32,
/// `y / (sqrt(x) + ε)` 38–40 against 57–60, and `sqrt(x) + sqrt(y)` 49–51 against 65–67.
fn sqrt_by_hardware(program: &[Instr]) -> bool {
    let (mut roots, mut others) = (0, 0);
    for instr in program {
        match *instr {
            Instr::Unary(UnaryOp::Sqrt, _) => roots += 1,
            Instr::Unary(UnaryOp::Recip | UnaryOp::Sigmoid, _) | Instr::Binary(BinaryOp::Div, _, _) => {
                return false;
            }
            _ => others += vector_instructions(instr),
        }
    }
    roots > 0 && others >= 3 * roots
}

/// The vector instructions an op's lanes in [`execute_chunk`] take, besides loads and stores.
fn vector_instructions(instr: &Instr) -> usize {
    match *instr {
        Instr::Unary(UnaryOp::Exp, _) => 15,
        Instr::Unary(UnaryOp::Erf, _) => 18,
        Instr::Unary(UnaryOp::Gelu, _) => 22,
        Instr::Unary(UnaryOp::Tanh | UnaryOp::Log, _) => 30,
        Instr::Unary(UnaryOp::Sin | UnaryOp::Cos, _) => 60,
        Instr::Binary(BinaryOp::Pow, _, _) => 190,
        Instr::Binary(
            BinaryOp::Max | BinaryOp::Min | BinaryOp::CmpLt | BinaryOp::CmpLe | BinaryOp::CmpEq,
            _,
            _,
        )
        | Instr::Where(..) => 2,
        _ => 1,
    }
}

/// The instructions that run in pairs: bit `i` set where instruction `i` is arithmetic
/// (`+ − × ÷`), `i + 1` is arithmetic too, `max` or `min`, or `relu`, `neg`, `abs` or `sqrt`, and
/// only `i + 1` reads `i`'s result. A pair runs as one loop with that result in a register, where
/// one at a time each op stores its chunk and the next loads it back: a chain of cheap ops is bound
/// by those stores and loads. Bit for bit the same values: the same operations in the same order,
/// each rounded to f32; but for which NaN: inside one loop the compiler may fold a negation into
/// the division or product before it (`(-x)/y` for `-(x/y)`, so the NaN of `inf/inf` keeps its
/// sign; `x·(-y)` for `-(x·y)`) or swap a sum's or product's operands (which picks the other of two
/// NaNs). AVX2 and AVX-512 pairs do the same (a reviewer's 20,000 random programs, with detection
/// patched to AVX2 in a copy). One thread of an AMD EPYC (Zen 3), [1024, 1024], 11 alternating
/// pairs with either build first, against one at a time: `(x − y)·y·y + x` 0.78 of its time, layer
/// norm's forward 0.83–0.85, `x − 0.1·y` 0.90–0.91. Pairs ending in `max`, `min` or a unary op,
/// over 1M values (best of 40, four alternating runs of each build): the 8-op chain 0.84–0.88 ms
/// against 0.94–0.98, `sqrt(|x − y| + 1)` 0.30–0.31 against 0.41, `max(min(x·y, 1), y)` 0.29–0.31
/// against 0.33–0.35. With AVX-512 (an Intel Xeon, best of 60, four alternating runs, identical
/// output): the 8-op chain 0.44–0.50 ms against 0.52–0.60; `(x − y)·y·y + x`, `sqrt(|x − y| + 1)`,
/// `max(min(x·y, 1), y)` and `exp(x·y − 0.1)/y` over 1M values, bound there by memory, unchanged
/// (0.42–0.44 ms either way). Longer groups would need a loop for each combination of ops.
fn pairs(program: &[Instr], leaves: usize) -> u64 {
    let len = program.len().min(64);
    let mut reads = [0u8; 64];
    for instr in program {
        let (operands, n) = instr.operands();
        for &v in &operands[..n] {
            if let Some(count) = v.checked_sub(leaves).and_then(|i| reads.get_mut(i)) {
                *count = count.saturating_add(1);
            }
        }
    }
    let arithmetic = |op| matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div);
    let (mut pairs, mut i) = (0, 0);
    while i + 1 < len {
        let result = leaves + i;
        let paired = match (program[i], program[i + 1]) {
            (Instr::Binary(first, ..), Instr::Binary(second, a, b)) => {
                let by_next = u8::from(a == result) + u8::from(b == result);
                let second_pairs = arithmetic(second) || matches!(second, BinaryOp::Max | BinaryOp::Min);
                arithmetic(first) && second_pairs && by_next > 0 && reads[i] == by_next
            }
            (Instr::Binary(first, ..), Instr::Unary(second, a)) => {
                let cheap = matches!(
                    second,
                    UnaryOp::Relu | UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sqrt
                );
                arithmetic(first) && cheap && a == result && reads[i] == 1
            }
            _ => false,
        };
        if paired {
            pairs |= 1 << i;
            i += 2;
        } else {
            i += 1;
        }
    }
    pairs
}

/// The vector instructions a chunked run uses.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "detected only on x86-64")
)]
#[derive(Clone, Copy, Debug, PartialEq)]
enum Isa {
    /// Every op has lanes.
    Avx512,
    /// With FMA: the ops [`has_avx2_lanes`] lists, which a training step's fused kernels,
    /// softmax, cross entropy, GELU and the 8-op chain use. A program with any other op
    /// (`sin`, `cos`, `pow`) runs one instruction at a time.
    Avx2,
}

/// The instructions `program` runs chunk by chunk with on this CPU, if any.
fn isa_for(program: &[Instr]) -> Option<Isa> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Some(Isa::Avx512);
        }
        let avx2 = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
        if avx2 && program.iter().all(has_avx2_lanes) {
            return Some(Isa::Avx2);
        }
    }
    let _ = program;
    None
}

/// Whether [`execute_chunk_avx2`] has lanes for `instr`.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "detected only on x86-64")
)]
fn has_avx2_lanes(instr: &Instr) -> bool {
    use BinaryOp as B;
    use UnaryOp as U;
    match *instr {
        Instr::Unary(op, _) => matches!(
            op,
            U::Neg
                | U::Abs
                | U::Relu
                | U::Recip
                | U::Sqrt
                | U::Exp
                | U::Log
                | U::Sigmoid
                | U::Tanh
                | U::Erf
                | U::Gelu
        ),
        Instr::Binary(op, _, _) => op != B::Pow,
        Instr::Where(..) => true,
    }
}

/// A program checked, once per kernel, to run chunk by chunk on this CPU, with its square-root
/// choice made: a kernel runs it on every block, and checking the program on each took a
/// measurable share of the 8-op chain.
pub(crate) struct Chunked<'p> {
    program: &'p [Instr],
    isa: Isa,
    hardware_sqrt: bool,
    /// Bit `i` set: instructions `i` and `i + 1` run as one pair (see [`pairs`]).
    pairs: u64,
}

impl<'p> Chunked<'p> {
    /// `program` over `leaves` leaves, if it can run chunk by chunk here: every op has lanes,
    /// for AVX-512 or for AVX2 with FMA.
    pub(crate) fn new(program: &'p [Instr], leaves: usize) -> Option<Self> {
        let isa = isa_for(program)?;
        Some(Chunked {
            program,
            isa,
            hardware_sqrt: sqrt_by_hardware(program),
            pairs: pairs(program, leaves),
        })
    }

    /// Values of tile a run needs: a chunk per instruction.
    pub(crate) fn tile_len(&self) -> usize {
        CHUNK * self.program.len()
    }

    /// Values a leaf that holds one value over a run needs behind its pointer: one chunk, read
    /// for every chunk.
    pub(crate) fn constant_len(&self) -> usize {
        CHUNK
    }

    /// Runs the program over `len` values, chunk by chunk. Value `v < leaves.len()` is read from
    /// `leaves[v]`, from its start for every chunk where bit `v` of `constant` is set (a leaf that
    /// holds one value over the run); instruction `i`'s result goes to its chunk of `tile`,
    /// except the last one's, which goes to `out`. `tile` on a cache line keeps vector loads and
    /// stores from straddling two.
    ///
    /// # Safety
    /// Each leaf pointer must be valid for reading `len` values (a constant one, the fewer of
    /// `len` and [`Chunked::constant_len`]) and `out` for writing `len`; `out` must overlap no
    /// leaf.
    ///
    /// # Panics
    /// If `tile` is shorter than [`Chunked::tile_len`].
    pub(crate) unsafe fn run(
        &self,
        leaves: &[*const f32],
        constant: u64,
        tile: &mut [f32],
        out: *mut f32,
        len: usize,
    ) {
        assert!(
            tile.len() >= self.tile_len(),
            "chunked run of {} instructions with {} tile values",
            self.program.len(),
            tile.len()
        );
        let leaves = (leaves, constant);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU supports the instructions (`new` checked) and the tile is large enough
        // (asserted just above); the rest is the caller's promise.
        unsafe {
            let run = match self.isa {
                Isa::Avx512 => run_avx512,
                Isa::Avx2 => run_avx2,
            };
            run(
                self.program,
                (self.hardware_sqrt, self.pairs),
                leaves,
                tile,
                out,
                len,
            )
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self.isa, self.hardware_sqrt, self.pairs, leaves, out, len);
            unreachable!("`new` makes no chunked program off x86-64")
        }
    }
}

/// The run loop of [`Chunked::run`], compiled for each instruction set with its
/// `execute_chunk` and `execute_pair`.
macro_rules! run_on {
    ($name:ident, $features:literal, $execute_chunk:ident, $execute_pair:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(
            program: &[Instr],
            (hardware_sqrt, pairs): (bool, u64),
            (leaves, constant): (&[*const f32], u64),
            tile: &mut [f32],
            out: *mut f32,
            len: usize,
        ) {
            let n_leaves = leaves.len();
            let Some(last) = program.len().checked_sub(1) else {
                return;
            };
            let tile = tile.as_mut_ptr();
            // Value `v` at position `start`: a leaf's own, or its instruction's chunk of the tile.
            let value = |v: usize, start: usize| -> *const f32 {
                if v < n_leaves {
                    // SAFETY: every leaf holds `len` values, or a chunk if constant (the caller's
                    // promise).
                    let step = if v < 64 && constant >> v & 1 == 1 {
                        0
                    } else {
                        start
                    };
                    unsafe { leaves.get_unchecked(v).add(step) }
                } else {
                    // SAFETY: values past the leaves are instruction results, which have chunks.
                    unsafe { tile.add((v - n_leaves) * CHUNK) }
                }
            };
            // SAFETY: `out` holds `len` values and `tile` a chunk per instruction (asserted).
            let dst = |i: usize, start: usize| unsafe {
                if i == last {
                    out.add(start)
                } else {
                    tile.add(i * CHUNK)
                }
            };
            // Whole chunks, whose constant length leaves the ops' loops without a bound to check.
            let whole = len - len % CHUNK;
            for start in (0..whole).step_by(CHUNK) {
                let mut i = 0;
                while let Some(instr) = program.get(i) {
                    if i < 64 && pairs >> i & 1 == 1 {
                        // SAFETY: as below; the pair's second instruction exists (`pairs` marks
                        // `i` only where `i + 1` is among the first 64 instructions).
                        unsafe {
                            let second = program.get_unchecked(i + 1);
                            let (result, out) = (n_leaves + i, dst(i + 1, start));
                            $execute_pair(
                                instr,
                                second,
                                result,
                                hardware_sqrt,
                                |v| value(v, start),
                                out,
                            )
                        };
                        i += 2;
                        continue;
                    }
                    // SAFETY: an instruction reads only leaves and earlier results, never its own chunk.
                    unsafe { $execute_chunk(instr, hardware_sqrt, |v| value(v, start), dst(i, start)) };
                    i += 1;
                }
            }
            // The rest, shorter than a chunk, one instruction at a time through the block-level loops.
            let n = len - whole;
            if n > 0 {
                let slice = |p: *const f32| unsafe { std::slice::from_raw_parts(p, n) };
                for (i, instr) in program.iter().enumerate() {
                    // SAFETY: as above; each operand and the destination hold at least `n` values.
                    let operands = operands(instr, |v| slice(value(v, whole)));
                    let out = unsafe {
                        std::slice::from_raw_parts_mut(dst(i, whole).cast::<MaybeUninit<f32>>(), n)
                    };
                    execute(instr, &operands, out);
                }
            }
        }
    };
}

run_on!(run_avx512, "avx512f", execute_chunk, execute_pair_avx512);
run_on!(run_avx2, "avx2,fma", execute_chunk_avx2, execute_pair_avx2);

/// One instruction over a chunk: `value(v)` points to value `v`'s values, `out` to the
/// result's; square roots by `vsqrtps` if `hardware_sqrt` (see [`sqrt_by_hardware`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn execute_chunk(
    instr: &Instr,
    hardware_sqrt: bool,
    value: impl Fn(usize) -> *const f32,
    out: *mut f32,
) {
    use super::math;
    use super::ops::{BinaryOp as B, UnaryOp as U};
    use std::arch::x86_64::*;
    let zero = _mm512_setzero_ps();
    let one = _mm512_set1_ps(1.0);
    // Lane masks are selected with blends: `blend(m, x, y)` is `y` where `m` is set, else `x`.
    let ones_where = |m: __mmask16| _mm512_maskz_mov_ps(m, one);
    // SAFETY (each use): `value` and `out` point to a chunk's values (the caller's promise).
    let load = |p: *const f32, k: usize| unsafe { _mm512_loadu_ps(p.add(k)) };
    let store = |k: usize, v: __m512| unsafe { _mm512_storeu_ps(out.add(k), v) };
    // An op's lanes over the chunk, its operands loaded as the named vectors.
    macro_rules! lanes {
        ($($x:ident = $v:ident),* => $body:expr) => {{
            $(let $x = value($v);)*
            for k in (0..CHUNK).step_by(16) {
                $(let $x = load($x, k);)*
                store(k, $body);
            }
        }};
    }
    match *instr {
        Instr::Unary(U::Neg, a) => lanes!(x = a => math::neg_avx512(x)),
        Instr::Unary(U::Abs, a) => lanes!(x = a => math::abs_avx512(x)),
        Instr::Unary(U::Relu, a) => lanes!(x = a => lanes_avx512::relu(x)),
        Instr::Unary(U::Recip, a) => lanes!(x = a => _mm512_div_ps(one, x)),
        Instr::Unary(U::Exp, a) => lanes!(x = a => math::exp_avx512(x)),
        Instr::Unary(U::Log, a) => lanes!(x = a => math::log_avx512(x)),
        Instr::Unary(U::Sqrt, a) if hardware_sqrt => lanes!(x = a => _mm512_sqrt_ps(x)),
        Instr::Unary(U::Sqrt, a) => lanes!(x = a => math::sqrt_avx512(x)),
        Instr::Unary(U::Sigmoid, a) => lanes!(x = a => math::sigmoid_avx512(x)),
        Instr::Unary(U::Erf, a) => lanes!(x = a => math::erf_avx512(x)),
        Instr::Unary(U::Gelu, a) => lanes!(x = a => math::gelu_avx512(x)),
        Instr::Unary(U::Tanh, a) => lanes!(x = a => math::tanh_avx512(x)),
        Instr::Unary(U::Sin, a) => lanes!(x = a => super::trig::sin_cos_avx512(x, false)),
        Instr::Unary(U::Cos, a) => lanes!(x = a => super::trig::sin_cos_avx512(x, true)),
        Instr::Binary(B::Add, a, b) => lanes!(x = a, y = b => _mm512_add_ps(x, y)),
        Instr::Binary(B::Sub, a, b) => lanes!(x = a, y = b => _mm512_sub_ps(x, y)),
        Instr::Binary(B::Mul, a, b) => lanes!(x = a, y = b => _mm512_mul_ps(x, y)),
        Instr::Binary(B::Div, a, b) => lanes!(x = a, y = b => _mm512_div_ps(x, y)),
        Instr::Binary(B::Pow, a, b) => lanes!(x = a, y = b => super::pow::pow_avx512(x, y)),
        Instr::Binary(B::Max, a, b) => lanes!(x = a, y = b => lanes_avx512::max(x, y)),
        Instr::Binary(B::Min, a, b) => lanes!(x = a, y = b => lanes_avx512::min(x, y)),
        Instr::Binary(B::CmpLt, a, b) => {
            lanes!(x = a, y = b => ones_where(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, y)))
        }
        Instr::Binary(B::CmpLe, a, b) => {
            lanes!(x = a, y = b => ones_where(_mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, y)))
        }
        Instr::Binary(B::CmpEq, a, b) => {
            lanes!(x = a, y = b => ones_where(_mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, y)))
        }
        // `c != 0` holds for NaN too: unordered or not equal.
        Instr::Where(c, a, b) => lanes!(c = c, x = a, y = b => {
            _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_NEQ_UQ>(c, zero), y, x)
        }),
    }
}

/// Lanes of ops that run alone and as a pair's second op (see [`execute_pair_avx512`]), written
/// once so both give the same bits (`neg`, `abs` and `sqrt` are `math`'s). `max(p, q)` is `p` if
/// `p > q`, else `q` (a NaN `q` too, and of two zeros), but a NaN `p` is kept; likewise for min.
/// `relu` is `max(0, x)`, whose second operand comes back for a NaN or two zeros: `x`, as the
/// scalar `if x < 0 { 0 } else { x }`; one instruction where a compare and a blend took two.
#[cfg(target_arch = "x86_64")]
mod lanes_avx512 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn max(p: __m512, q: __m512) -> __m512 {
        _mm512_mask_max_ps(p, _mm512_cmp_ps_mask::<_CMP_ORD_Q>(p, p), p, q)
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn min(p: __m512, q: __m512) -> __m512 {
        _mm512_mask_min_ps(p, _mm512_cmp_ps_mask::<_CMP_ORD_Q>(p, p), p, q)
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn relu(x: __m512) -> __m512 {
        _mm512_max_ps(_mm512_setzero_ps(), x)
    }
}

/// The AVX2 lanes of [`lanes_avx512`]'s ops, and of `neg` and `abs`, for ops alone and in pairs
/// (see [`execute_pair_avx2`]); the same semantics.
#[cfg(target_arch = "x86_64")]
mod lanes_avx2 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn max(p: __m256, q: __m256) -> __m256 {
        _mm256_blendv_ps(_mm256_max_ps(p, q), p, _mm256_cmp_ps::<_CMP_UNORD_Q>(p, p))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn min(p: __m256, q: __m256) -> __m256 {
        _mm256_blendv_ps(_mm256_min_ps(p, q), p, _mm256_cmp_ps::<_CMP_UNORD_Q>(p, p))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn neg(x: __m256) -> __m256 {
        _mm256_xor_ps(x, _mm256_set1_ps(-0.0))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn abs(x: __m256) -> __m256 {
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), x)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn relu(x: __m256) -> __m256 {
        _mm256_max_ps(_mm256_setzero_ps(), x)
    }
}

/// [`execute_chunk`] with AVX2 and FMA, for the ops [`has_avx2_lanes`] lists (square roots
/// always by `vsqrtps`, which has no estimate to refine here); each op bit-identical to its
/// scalar semantics in `ops`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn execute_chunk_avx2(instr: &Instr, _: bool, value: impl Fn(usize) -> *const f32, out: *mut f32) {
    use super::math;
    use super::ops::{BinaryOp as B, UnaryOp as U};
    use std::arch::x86_64::*;
    let zero = _mm256_setzero_ps();
    let one = _mm256_set1_ps(1.0);
    // SAFETY (each use): `value` and `out` point to a chunk's values (the caller's promise).
    let load = |p: *const f32, k: usize| unsafe { _mm256_loadu_ps(p.add(k)) };
    let store = |k: usize, v: __m256| unsafe { _mm256_storeu_ps(out.add(k), v) };
    macro_rules! lanes {
        ($($x:ident = $v:ident),* => $body:expr) => {{
            $(let $x = value($v);)*
            for k in (0..CHUNK).step_by(8) {
                $(let $x = load($x, k);)*
                store(k, $body);
            }
        }};
    }
    match *instr {
        Instr::Unary(U::Neg, a) => lanes!(x = a => lanes_avx2::neg(x)),
        Instr::Unary(U::Abs, a) => lanes!(x = a => lanes_avx2::abs(x)),
        Instr::Unary(U::Relu, a) => lanes!(x = a => lanes_avx2::relu(x)),
        Instr::Unary(U::Recip, a) => lanes!(x = a => _mm256_div_ps(one, x)),
        Instr::Unary(U::Sqrt, a) => lanes!(x = a => _mm256_sqrt_ps(x)),
        // A chunk within the exponent's normal range (most are) scales by one exponent add.
        // SAFETY: the chunk holds `CHUNK` values, a multiple of 8.
        Instr::Unary(U::Exp, a) if unsafe { math::all_below_avx2(value(a), CHUNK, math::EXP_IN_RANGE) } => {
            lanes!(x = a => math::exp_avx2_in_range(x))
        }
        Instr::Unary(U::Exp, a) => lanes!(x = a => math::exp_avx2(x)),
        Instr::Unary(U::Log, a) => lanes!(x = a => math::log_avx2(x)),
        Instr::Unary(U::Tanh, a) => lanes!(x = a => math::tanh_avx2(x)),
        Instr::Unary(U::Erf, a) => lanes!(x = a => math::erf_avx2(x)),
        Instr::Unary(U::Gelu, a) => lanes!(x = a => math::gelu_avx2(x)),
        // SAFETY: as for `exp`.
        Instr::Unary(U::Sigmoid, a)
            if unsafe { math::all_below_avx2(value(a), CHUNK, math::EXP_IN_RANGE) } =>
        {
            lanes!(x = a => math::sigmoid_avx2(x, math::exp_avx2_in_range))
        }
        Instr::Unary(U::Sigmoid, a) => lanes!(x = a => math::sigmoid_avx2(x, math::exp_avx2)),
        Instr::Binary(B::Add, a, b) => lanes!(x = a, y = b => _mm256_add_ps(x, y)),
        Instr::Binary(B::Sub, a, b) => lanes!(x = a, y = b => _mm256_sub_ps(x, y)),
        Instr::Binary(B::Mul, a, b) => lanes!(x = a, y = b => _mm256_mul_ps(x, y)),
        Instr::Binary(B::Div, a, b) => lanes!(x = a, y = b => _mm256_div_ps(x, y)),
        Instr::Binary(B::Max, a, b) => lanes!(x = a, y = b => lanes_avx2::max(x, y)),
        Instr::Binary(B::Min, a, b) => lanes!(x = a, y = b => lanes_avx2::min(x, y)),
        Instr::Binary(B::CmpLt, a, b) => {
            lanes!(x = a, y = b => _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(x, y), one))
        }
        Instr::Binary(B::CmpLe, a, b) => {
            lanes!(x = a, y = b => _mm256_and_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(x, y), one))
        }
        Instr::Binary(B::CmpEq, a, b) => {
            lanes!(x = a, y = b => _mm256_and_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(x, y), one))
        }
        // `c != 0` holds for NaN too: unordered or not equal. A blend takes its second operand
        // where the mask's lane is set.
        Instr::Where(c, a, b) => lanes!(c = c, x = a, y = b => {
            _mm256_blendv_ps(y, x, _mm256_cmp_ps::<_CMP_NEQ_UQ>(c, zero))
        }),
        _ => unreachable!("{instr:?} has no AVX2 lanes (`has_avx2_lanes`)"),
    }
}

/// `$body` with `$f` bound to the lanes of binary op `$op` on vectors of `$vector`: one copy of
/// `$body` per op, so each pair's loop has both its ops inlined.
#[cfg(target_arch = "x86_64")]
macro_rules! with_binary {
    ($vector:ty, $op:expr, [$($name:ident => $lanes:path),*], |$f:ident| $body:expr) => {
        match $op {
            $(
                BinaryOp::$name => {
                    let $f = |p: $vector, q: $vector| $lanes(p, q);
                    $body
                }
            )*
            op => unreachable!("{op:?} is not paired (`pairs`)"),
        }
    };
}

/// [`with_binary`] for the unary ops a pair ends with: the square root by `$vsqrtps` where
/// `$hardware` holds (see [`sqrt_by_hardware`]), else by `$refined`.
#[cfg(target_arch = "x86_64")]
macro_rules! with_unary {
    ($vector:ty, $op:expr, $neg:path, $abs:path, $relu:path, ($hardware:expr, $vsqrtps:path, $refined:path), |$u:ident| $body:expr) => {
        match $op {
            UnaryOp::Neg => {
                let $u = |t: $vector| $neg(t);
                $body
            }
            UnaryOp::Abs => {
                let $u = |t: $vector| $abs(t);
                $body
            }
            UnaryOp::Relu => {
                let $u = |t: $vector| $relu(t);
                $body
            }
            UnaryOp::Sqrt if $hardware => {
                let $u = |t: $vector| $vsqrtps(t);
                $body
            }
            UnaryOp::Sqrt => {
                let $u = |t: $vector| $refined(t);
                $body
            }
            op => unreachable!("{op:?} is not paired (`pairs`)"),
        }
    };
}

/// Defines `$execute` (two instructions over a chunk as one loop, see [`pairs`]: `first`,
/// arithmetic, whose result is value `result`, and `second`, which reads it and writes to `out`)
/// and `$pair`, its loop, for one instruction set: its vector type, lanes per vector, and each
/// op's lanes, the same ones the op runs with alone.
macro_rules! pair_executor {
    (
        $execute:ident, $pair:ident, $features:literal, $vector:ty, $lanes:literal,
        $load:ident, $store:ident, [$add:path, $sub:path, $mul:path, $div:path],
        max: $max:path, min: $min:path, neg: $neg:path, abs: $abs:path, relu: $relu:path,
        sqrt: $vsqrtps:path, $refined:path
    ) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn $execute(
            first: &Instr,
            second: &Instr,
            result: usize,
            hardware_sqrt: bool,
            value: impl Fn(usize) -> *const f32,
            out: *mut f32,
        ) {
            use std::arch::x86_64::*;
            let Instr::Binary(f, a, b) = *first else {
                unreachable!("{first:?} does not start a pair (`pairs`)")
            };
            let (x, y) = (value(a), value(b));
            // One loop per pair of ops and side the result is read on, each with both ops inlined.
            // SAFETY (each): every operand and `out` hold a chunk (the caller's promise).
            unsafe {
                with_binary!($vector, f, [Add => $add, Sub => $sub, Mul => $mul, Div => $div], |f| {
                    match *second {
                        Instr::Binary(g, c, d) => with_binary!(
                            $vector,
                            g,
                            [Add => $add, Sub => $sub, Mul => $mul, Div => $div, Max => $max, Min => $min],
                            |g| match (c == result, d == result) {
                                (true, true) => $pair(x, y, x, out, f, |t, _| g(t, t)),
                                (true, false) => $pair(x, y, value(d), out, f, g),
                                _ => $pair(x, y, value(c), out, f, |t, o| g(o, t)),
                            }
                        ),
                        // `x` is read for nothing.
                        Instr::Unary(u, _) => with_unary!(
                            $vector,
                            u,
                            $neg,
                            $abs,
                            $relu,
                            (hardware_sqrt, $vsqrtps, $refined),
                            |u| $pair(x, y, x, out, f, |t, _| u(t))
                        ),
                        Instr::Where(..) => unreachable!("{second:?} is not paired (`pairs`)"),
                    }
                })
            }
        }

        /// `second(first(x, y), other)` over a chunk.
        ///
        /// # Safety
        /// `x`, `y` and `other` must be valid for reading a chunk, `out` for writing one.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn $pair(
            x: *const f32,
            y: *const f32,
            other: *const f32,
            out: *mut f32,
            first: impl Fn($vector, $vector) -> $vector,
            second: impl Fn($vector, $vector) -> $vector,
        ) {
            use std::arch::x86_64::*;
            for k in (0..CHUNK).step_by($lanes) {
                // SAFETY: each pointer holds a chunk (the caller's promise).
                unsafe {
                    let t = first($load(x.add(k)), $load(y.add(k)));
                    $store(out.add(k), second(t, $load(other.add(k))));
                }
            }
        }
    };
}

pair_executor!(
    execute_pair_avx512, pair_avx512, "avx512f", std::arch::x86_64::__m512, 16,
    _mm512_loadu_ps, _mm512_storeu_ps, [_mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_div_ps],
    max: lanes_avx512::max, min: lanes_avx512::min, neg: super::math::neg_avx512,
    abs: super::math::abs_avx512, relu: lanes_avx512::relu,
    sqrt: _mm512_sqrt_ps, super::math::sqrt_avx512
);
// AVX2 has no square-root estimate to refine: `vsqrtps` either way.
pair_executor!(
    execute_pair_avx2, pair_avx2, "avx2,fma", std::arch::x86_64::__m256, 8,
    _mm256_loadu_ps, _mm256_storeu_ps, [_mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_div_ps],
    max: lanes_avx2::max, min: lanes_avx2::min, neg: lanes_avx2::neg, abs: lanes_avx2::abs,
    relu: lanes_avx2::relu, sqrt: _mm256_sqrt_ps, _mm256_sqrt_ps
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::ops::{binary_f32, unary_f32};

    const SPECIALS: [f32; 14] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        88.7,
        -103.9,
        1e-40,
        -1e-40,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ];

    /// Every pair of specials, then a spread of binades of both signs: `(a, b)` columns whose
    /// length leaves a partial chunk and a partial vector.
    fn operands() -> (Vec<f32>, Vec<f32>) {
        let mut a: Vec<f32> = SPECIALS.iter().flat_map(|&x| SPECIALS.map(|_| x)).collect();
        let mut b: Vec<f32> = SPECIALS.iter().flat_map(|_| SPECIALS).collect();
        for i in 0..(3 * CHUNK as u32 + 5) {
            a.push(f32::from_bits(i.wrapping_mul(2_654_435_761)));
            b.push(f32::from_bits(i.wrapping_mul(40_503).rotate_left(7)));
        }
        (a, b)
    }

    fn same(got: f32, want: f32) -> bool {
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
    }

    /// On AVX-512 every op, on AVX2 with FMA those [`has_avx2_lanes`] lists.
    #[test]
    fn every_op_with_lanes_matches_its_scalar_semantics_bit_for_bit() {
        let (a, b) = operands();
        let instrs = (UnaryOp::ALL.iter().map(|&op| Instr::Unary(op, 0)))
            .chain(BinaryOp::ALL.iter().map(|&op| Instr::Binary(op, 0, 1)))
            .chain([Instr::Where(0, 1, 0), Instr::Where(1, 0, 1)]);
        let mut tile = vec![0.0; CHUNK];
        let (mut tested, mut expected) = (0, 0);
        for instr in instrs {
            let program = [instr];
            expected += match isa_for(&[]) {
                Some(Isa::Avx512) => 1,
                Some(Isa::Avx2) => usize::from(has_avx2_lanes(&instr)),
                None => 0,
            };
            let Some(chunked) = Chunked::new(&program, 2) else {
                continue;
            };
            tested += 1;
            // Lengths from a partial vector to past a chunk boundary.
            for len in [1, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 3, a.len()] {
                let mut out = vec![f32::NAN; len];
                // SAFETY: both leaves hold at least `len` values, and `out` is separate.
                unsafe { chunked.run(&[a.as_ptr(), b.as_ptr()], 0, &mut tile, out.as_mut_ptr(), len) };
                for i in 0..len {
                    let want = match instr {
                        Instr::Unary(op, _) => unary_f32(op, a[i]),
                        Instr::Binary(op, _, _) => binary_f32(op, a[i], b[i]),
                        Instr::Where(c, x, y) => {
                            let v = |k| if k == 0 { a[i] } else { b[i] };
                            if v(c) != 0.0 { v(x) } else { v(y) }
                        }
                    };
                    assert!(
                        same(out[i], want),
                        "{instr:?} of ({:e}, {:e}), length {len}: {:e}, scalar {want:e}",
                        a[i],
                        b[i],
                        out[i]
                    );
                }
            }
        }
        // Every op with lanes on this CPU, and no other.
        assert_eq!(tested, expected);
    }

    /// `exp` and `sigmoid` over chunks wholly within exp's one-step range, and over chunks with
    /// one value past it (in a different lane each time): the scalar form's bits in both.
    #[test]
    fn exp_and_sigmoid_match_their_scalar_forms_on_chunks_in_and_out_of_the_fast_range() {
        for op in [UnaryOp::Exp, UnaryOp::Sigmoid] {
            exp_like_matches_its_scalar_form(op);
        }
    }

    fn exp_like_matches_its_scalar_form(op: UnaryOp) {
        let program = [Instr::Unary(op, 0)];
        let Some(chunked) = Chunked::new(&program, 1) else {
            return;
        };
        let below = f32::from_bits(super::super::math::EXP_IN_RANGE.to_bits() - 1);
        let spread = |i: usize| (i as f32 / (2 * CHUNK) as f32 - 1.0) * below;
        let mut xs: Vec<f32> = (0..4 * CHUNK).map(spread).collect();
        xs[..2].copy_from_slice(&[below, -below]);
        for (k, outlier) in [
            86.0,
            -86.0,
            -87.5,
            -103.9,
            88.7,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]
        .into_iter()
        .enumerate()
        {
            let start = xs.len();
            xs.extend((0..CHUNK).map(|i| spread(3 * i)));
            xs[start + 17 * k] = outlier;
        }
        let mut tile = vec![0.0; chunked.tile_len()];
        let mut out = vec![0.0; xs.len()];
        // SAFETY: the leaf and `out` hold `xs.len()` values each and do not overlap.
        unsafe { chunked.run(&[xs.as_ptr()], 0, &mut tile, out.as_mut_ptr(), xs.len()) };
        for (&x, &got) in xs.iter().zip(&out) {
            let want = unary_f32(op, x);
            assert!(same(got, want), "{op:?}({x:e}) = {got:e}, scalar {want:e}");
        }
    }

    #[test]
    fn arithmetic_runs_in_pairs_where_only_the_next_instruction_reads_the_first() {
        use BinaryOp::{Add, CmpLt, Div, Max, Min, Mul, Sub};
        use UnaryOp::{Exp, Relu, Sqrt};
        let (b, u) = (Instr::Binary, Instr::Unary);
        // Layer norm's `(x − mean)·rstd·weight + bias` over five leaves: two pairs.
        assert_eq!(
            pairs(&[b(Sub, 0, 1), b(Mul, 5, 2), b(Mul, 6, 3), b(Add, 7, 4)], 5),
            0b101
        );
        // The result read on the right, or twice (`(x − y)²`).
        assert_eq!(pairs(&[b(Mul, 0, 1), b(Sub, 0, 2)], 2), 0b1);
        assert_eq!(pairs(&[b(Sub, 0, 1), b(Mul, 2, 2)], 2), 0b1);
        // Read again later: stored, so not paired; the next two are.
        assert_eq!(pairs(&[b(Sub, 0, 1), b(Mul, 2, 0), b(Div, 3, 2)], 2), 0b10);
        // The next instruction does not read it, or is not one that pairs.
        assert_eq!(pairs(&[b(Sub, 0, 1), b(Mul, 0, 1), b(Add, 2, 3)], 2), 0b10);
        assert_eq!(pairs(&[b(Sub, 0, 1), b(CmpLt, 2, 0)], 2), 0);
        assert_eq!(pairs(&[b(Mul, 0, 1), u(Exp, 2)], 2), 0);
        assert_eq!(pairs(&[u(Exp, 0), b(Mul, 1, 0)], 1), 0);
        // A maximum, a minimum or a cheap unary op second: the 8-op chain's three pairs.
        assert_eq!(pairs(&[b(Sub, 0, 1), b(Max, 2, 0)], 2), 0b1);
        assert_eq!(pairs(&[b(Sub, 0, 1), b(Min, 1, 2)], 2), 0b1);
        let chain = [
            b(Mul, 0, 1),
            b(Add, 3, 2),
            u(Relu, 4),
            u(Exp, 5),
            b(Sub, 6, 0),
            u(Sqrt, 7),
            b(Mul, 8, 0),
            b(Max, 9, 0),
        ];
        assert_eq!(pairs(&chain, 3), 0b0101_0001);
        // A unary op whose input is read again later: not paired.
        assert_eq!(pairs(&[b(Sub, 0, 1), u(Relu, 2), b(Add, 2, 3)], 2), 0);
        // A long chain: pairs up to instruction 63.
        let chain: Vec<Instr> = (0..70).map(|i| b(Add, i, 0)).collect();
        assert_eq!(pairs(&chain, 1), 0x5555_5555_5555_5555);
    }

    /// A program longer than 64 instructions (a node read through several views is one
    /// instruction per view) pairs only among its first 64: `pairs` has a bit for each of those,
    /// and instruction 64 was taken as the start of a pair whenever bit 0 was set, reading past
    /// the program when it was the last (found under Miri).
    #[test]
    fn a_program_past_64_instructions_pairs_only_within_them() {
        let (a, b) = operands();
        let len = a.len();
        for total in [65, 66, 129, 130] {
            // (a·b + b), a pair, then negated again and again.
            let mut program = vec![
                Instr::Binary(BinaryOp::Mul, 0, 1),
                Instr::Binary(BinaryOp::Add, 2, 1),
            ];
            program.extend((2..total).map(|i| Instr::Unary(UnaryOp::Neg, 2 + i - 1)));
            let Some(chunked) = Chunked::new(&program, 2) else {
                assert!(isa_for(&[]).is_none());
                return;
            };
            let mut tile = vec![0.0; total * CHUNK];
            let mut out = vec![0.0; len];
            // SAFETY: both leaves hold `len` values, `out` is separate, and `tile` has a chunk
            // per instruction.
            unsafe { chunked.run(&[a.as_ptr(), b.as_ptr()], 0, &mut tile, out.as_mut_ptr(), len) };
            for i in 0..len {
                let sum = binary_f32(BinaryOp::Add, binary_f32(BinaryOp::Mul, a[i], b[i]), b[i]);
                let want = if (total - 2) % 2 == 0 { sum } else { -sum };
                assert!(
                    same(out[i], want),
                    "{total} instructions, at {i}: {:e}, want {want:e}",
                    out[i]
                );
            }
        }
    }

    /// Each paired loop (every pair of ops, a binary second reading the result on either side or
    /// both) gives the scalar ops' bits, over chunks and a partial one.
    #[test]
    fn every_pair_matches_its_two_scalar_ops_bit_for_bit() {
        use BinaryOp::{Add, Div, Max, Min, Mul, Sub};
        use UnaryOp::{Abs, Neg, Relu, Sqrt};
        let (a, b) = operands();
        let c: Vec<f32> = a.iter().rev().copied().collect();
        let len = a.len();
        let mut tile = vec![0.0; 2 * CHUNK];
        let binary_seconds = [Add, Sub, Mul, Div, Max, Min]
            .into_iter()
            .flat_map(|op| [(3, 2), (2, 3), (3, 3)].map(|(x, y)| Instr::Binary(op, x, y)));
        let seconds: Vec<Instr> = binary_seconds
            .chain([Relu, Neg, Abs, Sqrt].map(|op| Instr::Unary(op, 3)))
            .collect();
        for first in [Add, Sub, Mul, Div] {
            for &second in &seconds {
                let program = [Instr::Binary(first, 0, 1), second];
                assert_eq!(pairs(&program, 3), 1);
                let Some(chunked) = Chunked::new(&program, 3) else {
                    assert!(isa_for(&[]).is_none());
                    return;
                };
                let mut out = vec![0.0; len];
                // SAFETY: the leaves and `out` hold `len` values, and `out` is separate.
                unsafe {
                    chunked.run(
                        &[a.as_ptr(), b.as_ptr(), c.as_ptr()],
                        0,
                        &mut tile,
                        out.as_mut_ptr(),
                        len,
                    )
                };
                for i in 0..len {
                    let t = binary_f32(first, a[i], b[i]);
                    let v = |k| if k == 3 { t } else { c[i] };
                    let want = match second {
                        Instr::Binary(op, x, y) => binary_f32(op, v(x), v(y)),
                        Instr::Unary(op, _) => unary_f32(op, t),
                        Instr::Where(..) => unreachable!(),
                    };
                    assert!(
                        same(out[i], want),
                        "{program:?} at {i} of ({:e}, {:e}, {:e}): {:e}, scalar {want:e}",
                        a[i],
                        b[i],
                        c[i],
                        out[i]
                    );
                }
            }
        }
    }

    #[test]
    fn square_roots_use_the_divider_only_beside_enough_other_work() {
        use BinaryOp::{Add, Div, Mul};
        use UnaryOp::{Exp, Relu, Sqrt};
        let (u, b) = (Instr::Unary, Instr::Binary);
        // sqrt(x·x + y·y): three other instructions.
        assert!(sqrt_by_hardware(&[
            b(Mul, 0, 0),
            b(Mul, 1, 1),
            b(Add, 2, 3),
            u(Sqrt, 4)
        ]));
        // sqrt(exp(x))·y: an exp is fifteen.
        assert!(sqrt_by_hardware(&[u(Exp, 0), u(Sqrt, 2), b(Mul, 3, 1)]));
        // sqrt(relu(x)), sqrt(x·y + x): too little to hide the divider behind.
        assert!(!sqrt_by_hardware(&[u(Relu, 0), u(Sqrt, 1)]));
        assert!(!sqrt_by_hardware(&[b(Mul, 0, 1), b(Add, 2, 0), u(Sqrt, 3)]));
        // Two roots need twice the work; a division shares the divider.
        assert!(!sqrt_by_hardware(&[
            u(Sqrt, 0),
            u(Sqrt, 1),
            b(Mul, 0, 1),
            b(Mul, 4, 0),
            b(Add, 2, 3)
        ]));
        assert!(!sqrt_by_hardware(&[u(Exp, 0), u(Sqrt, 2), b(Div, 1, 3)]));
        assert!(!sqrt_by_hardware(&[u(Exp, 0), b(Mul, 2, 1)]));
    }

    #[test]
    fn a_program_reads_earlier_results_in_every_chunk() {
        // `max(sqrt(f(relu(x·2 + 2)) - x)·x, x)`, whose results each feed a later instruction,
        // over several chunks and a partial one. With exp, the square root runs on `vsqrtps`;
        // with sigmoid (a division), as a refined estimate.
        let (x, _) = operands();
        let two = vec![2.0; x.len()];
        for f in [UnaryOp::Exp, UnaryOp::Sigmoid] {
            let program = [
                Instr::Binary(BinaryOp::Mul, 0, 1),
                Instr::Binary(BinaryOp::Add, 2, 1),
                Instr::Unary(UnaryOp::Relu, 3),
                Instr::Unary(f, 4),
                Instr::Binary(BinaryOp::Sub, 5, 0),
                Instr::Unary(UnaryOp::Sqrt, 6),
                Instr::Binary(BinaryOp::Mul, 7, 0),
                Instr::Binary(BinaryOp::Max, 8, 0),
            ];
            // Only a CPU without AVX2 and FMA runs no chunks.
            let Some(chunked) = Chunked::new(&program, 2) else {
                assert!(isa_for(&[]).is_none());
                continue;
            };
            assert_eq!(chunked.hardware_sqrt, f == UnaryOp::Exp);
            // `(mul, add)`, `(sub, sqrt)` and `(mul, max)` run as pairs on either instruction set.
            assert_eq!(chunked.pairs, 0b0101_0001);
            let mut tile = vec![0.0; chunked.tile_len()];
            let mut out = vec![0.0; x.len()];
            // SAFETY: both leaves and `out` hold `x.len()` values, and `out` is separate.
            unsafe {
                chunked.run(
                    &[x.as_ptr(), two.as_ptr()],
                    0,
                    &mut tile,
                    out.as_mut_ptr(),
                    x.len(),
                )
            };
            // The 2 as a constant leaf, its first chunk read for every chunk (and the partial
            // last one; NaN past it): the same bits.
            let mut again = vec![0.0; x.len()];
            let mut one_chunk = two.clone();
            one_chunk[chunked.constant_len()..].fill(f32::NAN);
            // SAFETY: as above.
            unsafe {
                chunked.run(
                    &[x.as_ptr(), one_chunk.as_ptr()],
                    0b10,
                    &mut tile,
                    again.as_mut_ptr(),
                    x.len(),
                )
            };
            assert!(
                out.iter().zip(&again).all(|(a, b)| same(*a, *b)),
                "{f:?}: constant leaf"
            );
            for (i, (&x, &got)) in x.iter().zip(&out).enumerate() {
                let t = binary_f32(BinaryOp::Add, x * 2.0, 2.0);
                let t = unary_f32(f, unary_f32(UnaryOp::Relu, t));
                let t = unary_f32(UnaryOp::Sqrt, t - x) * x;
                let want = binary_f32(BinaryOp::Max, t, x);
                assert!(
                    same(got, want),
                    "{f:?}, position {i}, x = {x:e}: {got:e}, scalar {want:e}"
                );
            }
        }
    }
}
