//! Making tensors: from nested arrays (shape inferred), from a flat `Vec` (checked), constants,
//! ranges, identities, and random fills from a caller's seeded RNG.

use rand::Rng;

use super::{NoGrad, Tensor};
use crate::autograd::Var;
use crate::error::{Error, Result, or_panic_in};
use crate::lazy::LazyBuffer;
use crate::lazy::storage::Storage;
use crate::shape::runtime::checked_numel;
use crate::shape::{Const, ConstShape, Shape};

impl<S: Shape> Tensor<S, NoGrad> {
    fn from_lazy(shape: S, buf: LazyBuffer) -> Self {
        Tensor::from_var(shape, Var::untracked(buf))
    }

    /// A tensor of `shape` holding `data` in row-major order. The values are copied into storage
    /// that starts on a cache line, as every buffer of the library does (see
    /// [`LazyBuffer::from_vec`](crate::lazy::LazyBuffer::from_vec)).
    ///
    /// [`Error::LengthMismatch`] if `data`'s length is not `shape`'s element count, or
    /// [`Error::ShapeOverflow`] if that count does not fit in `usize`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2usize, Const::<3>)).unwrap();
    /// assert_eq!(t.dims(), vec![2, 3]);
    /// let err = Tensor::from_vec(vec![1.0; 5], (2usize, Const::<3>)).unwrap_err();
    /// assert_eq!(err.to_string(), "a buffer of length 5 cannot fill shape [2, 3], which holds 6 elements");
    /// // A static shape is a value too: its `Default`.
    /// let s = Tensor::<Rank2<2, 3>>::from_vec(vec![0.5; 6], Default::default()).unwrap();
    /// assert_eq!(s.to_array(), [[0.5; 3]; 2]);
    /// ```
    pub fn from_vec(data: Vec<f32>, shape: S) -> Result<Self> {
        Ok(Self::from_lazy(shape, LazyBuffer::from_vec(data, &shape.dims())?))
    }

    /// Every element `value`, for a shape given at run time. Stores one element, broadcast.
    ///
    /// # Panics
    ///
    /// If the shape's element count overflows `usize`, naming the shape; see
    /// [`try_full_in`](Self::try_full_in).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::full_in((3usize,), 0.5);
    /// assert_eq!(t.to_vec(), vec![0.5; 3]);
    /// ```
    #[track_caller]
    pub fn full_in(shape: S, value: f32) -> Self {
        or_panic_in("full_in", Self::try_full_in(shape, value))
    }

    /// [`full_in`](Self::full_in), or [`Error::ShapeOverflow`] if the shape's element count
    /// overflows `usize`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert!(Tensor::try_full_in((2usize, 3usize), 1.0).is_ok());
    /// let err = Tensor::try_full_in((usize::MAX, 2usize), 1.0).unwrap_err();
    /// assert!(matches!(err, Error::ShapeOverflow { .. }));
    /// ```
    pub fn try_full_in(shape: S, value: f32) -> Result<Self> {
        let dims = shape.dims();
        checked_numel(&dims)?;
        Ok(Self::from_lazy(shape, LazyBuffer::full(&dims, value)))
    }

    /// Zeros, for a shape given at run time.
    ///
    /// # Panics
    ///
    /// If the shape's element count overflows `usize`; see [`try_zeros_in`](Self::try_zeros_in).
    #[track_caller]
    pub fn zeros_in(shape: S) -> Self {
        or_panic_in("zeros_in", Self::try_zeros_in(shape))
    }

    /// Zeros, or [`Error::ShapeOverflow`] if the shape's element count overflows `usize`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::try_zeros_in((2usize,)).unwrap().to_vec(), vec![0.0; 2]);
    /// assert!(Tensor::try_zeros_in((usize::MAX / 2, 3usize)).is_err());
    /// ```
    pub fn try_zeros_in(shape: S) -> Result<Self> {
        Self::try_full_in(shape, 0.0)
    }

    /// Ones, for a shape given at run time.
    ///
    /// # Panics
    ///
    /// If the shape's element count overflows `usize`; see [`try_ones_in`](Self::try_ones_in).
    #[track_caller]
    pub fn ones_in(shape: S) -> Self {
        or_panic_in("ones_in", Self::try_ones_in(shape))
    }

    /// Ones, or [`Error::ShapeOverflow`] if the shape's element count overflows `usize`.
    pub fn try_ones_in(shape: S) -> Result<Self> {
        Self::try_full_in(shape, 1.0)
    }

    /// Uniform samples in `[0, 1)` from `rng`, for a shape given at run time.
    ///
    /// # Panics
    ///
    /// If the shape's element count overflows `usize` or its values cannot be allocated; see
    /// [`try_rand_in`](Self::try_rand_in).
    #[track_caller]
    pub fn rand_in<R: Rng + ?Sized>(shape: S, rng: &mut R) -> Self {
        or_panic_in("rand_in", Self::try_rand_in(shape, rng))
    }

    /// [`rand_in`](Self::rand_in), or an error if the shape's element count overflows `usize`
    /// ([`Error::ShapeOverflow`]) or its values cannot be allocated ([`Error::Data`]).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// assert!(Tensor::try_rand_in((1usize << 60,), &mut rng).is_err(), "4 EiB cannot be allocated");
    /// assert_eq!(Tensor::try_rand_in((3usize,), &mut rng).unwrap().numel(), 3);
    /// ```
    pub fn try_rand_in<R: Rng + ?Sized>(shape: S, rng: &mut R) -> Result<Self> {
        Self::try_uniform_in(shape, 0.0, 1.0, rng)
    }

    /// Uniform samples in `[low, high)` from `rng`.
    ///
    /// # Panics
    ///
    /// As [`rand_in`](Self::rand_in), and if the range is not one
    /// [`try_uniform_in`](Self::try_uniform_in) takes (`low > high`, or not finite).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let t = Tensor::uniform_in((4usize,), -1.0, 1.0, &mut rng);
    /// assert!(t.to_vec().iter().all(|x| (-1.0..1.0).contains(x)));
    /// ```
    #[track_caller]
    pub fn uniform_in<R: Rng + ?Sized>(shape: S, low: f32, high: f32, rng: &mut R) -> Self {
        or_panic_in("uniform_in", Self::try_uniform_in(shape, low, high, rng))
    }

    /// [`uniform_in`](Self::uniform_in), or an error as [`try_rand_in`](Self::try_rand_in) gives,
    /// and [`Error::InvalidArgument`] unless `low <= high` and both and `high - low` are finite
    /// (`low == high` gives `low` everywhere), as PyTorch's `uniform_` requires.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// assert!(Tensor::try_uniform_in((2usize,), 1.0, -1.0, &mut rng).is_err());
    /// assert!(Tensor::try_uniform_in((2usize,), 0.0, f32::INFINITY, &mut rng).is_err());
    /// ```
    pub fn try_uniform_in<R: Rng + ?Sized>(shape: S, low: f32, high: f32, rng: &mut R) -> Result<Self> {
        if !(low <= high && (high - low).is_finite()) {
            return Err(Error::InvalidArgument {
                op: "uniform_in",
                message: format!(
                    "the range [{low}, {high}) must have low <= high, both finite and their \
                     difference finite"
                ),
            });
        }
        let buf = sample(&shape.dims(), |s| LazyBuffer::rand_uniform(s, low, high, rng))?;
        Ok(Self::from_lazy(shape, buf))
    }

    /// Standard normal samples from `rng`, for a shape given at run time.
    ///
    /// # Panics
    ///
    /// As [`rand_in`](Self::rand_in); see [`try_randn_in`](Self::try_randn_in).
    #[track_caller]
    pub fn randn_in<R: Rng + ?Sized>(shape: S, rng: &mut R) -> Self {
        or_panic_in("randn_in", Self::try_randn_in(shape, rng))
    }

    /// [`randn_in`](Self::randn_in), or an error as [`try_rand_in`](Self::try_rand_in) gives.
    pub fn try_randn_in<R: Rng + ?Sized>(shape: S, rng: &mut R) -> Result<Self> {
        let buf = sample(&shape.dims(), |s| LazyBuffer::rand_normal(s, 0.0, 1.0, rng))?;
        Ok(Self::from_lazy(shape, buf))
    }
}

/// Random tensors larger than this many elements are drawn in chunks of this size (even, so a
/// sampler that draws pairs draws the same sequence as in one piece) into a buffer reserved
/// first, so that a size that cannot be allocated is an error rather than an abort.
const SAMPLE_CHUNK: usize = 1 << 16;

/// The samples of `dims` in row-major order, `draw(shape)` giving the next samples in `shape`.
fn sample(dims: &[usize], mut draw: impl FnMut(&[usize]) -> LazyBuffer) -> Result<LazyBuffer> {
    let n = checked_numel(dims)?;
    if n <= SAMPLE_CHUNK {
        return Ok(draw(dims));
    }
    let mut data = Storage::try_with_capacity(n).map_err(|failure| Error::Data {
        location: format!("a tensor of shape {dims:?}"),
        message: format!(
            "its {n} values ({} bytes) cannot be allocated: {failure}",
            n as u128 * size_of::<f32>() as u128
        ),
    })?;
    while data.len() < n {
        let len = SAMPLE_CHUNK.min(n - data.len());
        draw(&[len]).with_values(|values| data.extend_from_slice(values));
    }
    Ok(LazyBuffer::from_storage(data, dims))
}

impl<S: ConstShape> Tensor<S, NoGrad> {
    /// Every element `value`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::<Rank2<2, 2>>::full(7.0);
    /// assert_eq!(t.to_array(), [[7.0, 7.0], [7.0, 7.0]]);
    /// ```
    pub fn full(value: f32) -> Self {
        Self::full_in(S::default(), value)
    }

    /// All zeros.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank1<3>>::zeros().to_array(), [0.0; 3]);
    /// ```
    pub fn zeros() -> Self {
        Self::full(0.0)
    }

    /// All ones.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank1<2>>::ones().to_array(), [1.0; 2]);
    /// ```
    pub fn ones() -> Self {
        Self::full(1.0)
    }

    /// Uniform samples in `[0, 1)` from the caller's `rng`; the same seed gives the same values.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let a = Tensor::<Rank1<3>>::rand(&mut rand::rngs::StdRng::seed_from_u64(1));
    /// let b = Tensor::<Rank1<3>>::rand(&mut rand::rngs::StdRng::seed_from_u64(1));
    /// assert_eq!(a.to_vec(), b.to_vec());
    /// ```
    pub fn rand<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::rand_in(S::default(), rng)
    }

    /// Standard normal samples from the caller's `rng`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let t = Tensor::<Rank1<1000>>::randn(&mut rand::rngs::StdRng::seed_from_u64(2));
    /// assert!(t.mean_all().item().abs() < 0.1);
    /// ```
    pub fn randn<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::randn_in(S::default(), rng)
    }
}

impl<S: Shape, G: super::GradMode> Tensor<S, G> {
    /// Zeros of this tensor's shape (untracked).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 2.0]).zeros_like().to_array(), [0.0, 0.0]);
    /// ```
    pub fn zeros_like(&self) -> Tensor<S> {
        Tensor::zeros_in(self.shape)
    }

    /// Ones of this tensor's shape (untracked).
    pub fn ones_like(&self) -> Tensor<S> {
        Tensor::ones_in(self.shape)
    }

    /// `value` everywhere, in this tensor's shape (untracked).
    pub fn full_like(&self, value: f32) -> Tensor<S> {
        Tensor::full_in(self.shape, value)
    }
}

impl<const N: usize> Tensor<(Const<N>,), NoGrad> {
    /// `0, 1, …, N-1`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank1<4>>::arange().to_array(), [0.0, 1.0, 2.0, 3.0]);
    /// ```
    pub fn arange() -> Self {
        Self::from_lazy(
            (Const,),
            LazyBuffer::from_values((0..N).map(|i| i as f32), &[N]).expect("N elements"),
        )
    }
}

impl<const N: usize> Tensor<(Const<N>, Const<N>), NoGrad> {
    /// The `N×N` identity matrix.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank2<2, 2>>::eye().to_array(), [[1.0, 0.0], [0.0, 1.0]]);
    /// ```
    pub fn eye() -> Self {
        let data = (0..N * N)
            .map(|i| if i / N == i % N { 1.0 } else { 0.0 })
            .collect();
        Self::from_lazy(
            (Const, Const),
            LazyBuffer::from_vec(data, &[N, N]).expect("N*N elements"),
        )
    }
}

fn checked<S: Shape>(data: Vec<f32>, shape: S) -> Tensor<S> {
    Tensor::from_vec(data, shape).expect("array length matches its type")
}

impl From<f32> for Tensor<()> {
    /// A scalar.
    fn from(value: f32) -> Self {
        checked(vec![value], ())
    }
}

impl<const A: usize> From<[f32; A]> for Tensor<(Const<A>,)> {
    /// `Tensor::from([1.0, 2.0])` is a `Tensor<Rank1<2>>`.
    fn from(values: [f32; A]) -> Self {
        checked(values.to_vec(), Default::default())
    }
}

impl<const A: usize, const B: usize> From<[[f32; B]; A]> for Tensor<(Const<A>, Const<B>)> {
    /// `Tensor::from([[1.0, 2.0], [3.0, 4.0]])` is a `Tensor<Rank2<2, 2>>`.
    fn from(values: [[f32; B]; A]) -> Self {
        checked(values.as_flattened().to_vec(), Default::default())
    }
}

impl<const A: usize, const B: usize, const C: usize> From<[[[f32; C]; B]; A]>
    for Tensor<(Const<A>, Const<B>, Const<C>)>
{
    /// A rank-3 tensor from nested arrays.
    fn from(values: [[[f32; C]; B]; A]) -> Self {
        checked(values.as_flattened().as_flattened().to_vec(), Default::default())
    }
}

impl<const A: usize, const B: usize, const C: usize, const D: usize> From<[[[[f32; D]; C]; B]; A]>
    for Tensor<(Const<A>, Const<B>, Const<C>, Const<D>)>
{
    /// A rank-4 tensor from nested arrays.
    fn from(values: [[[[f32; D]; C]; B]; A]) -> Self {
        checked(
            values.as_flattened().as_flattened().as_flattened().to_vec(),
            Default::default(),
        )
    }
}
