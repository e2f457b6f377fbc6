//! Shapes: runtime shape arithmetic, and the type-level vocabulary that makes shape mistakes
//! compile errors.

pub mod runtime;

pub mod axes;
pub mod broadcast;
pub mod cat;
pub mod dims;
pub mod matmul;
pub mod permute;
pub mod reduce;
pub mod reshape;
pub mod shapes;
pub mod single;
pub mod squeeze;

pub use axes::{Axes, Axes2, Axes3, Axes4, Axes5, Axes6, Axis, HasAxis};
pub use broadcast::{BroadcastDim, BroadcastShape, BroadcastTo, ExpandDim};
pub use cat::{CatAlong, CatWith};
pub use dims::{Const, ConstDim, Dim, One};
pub use matmul::MatMulShape;
pub use permute::{PermuteShape, SwapLast};
pub use reduce::ReduceShape;
pub use reshape::{assert_same_numel, check_reshape};
pub use shapes::{ConstShape, Rank0, Rank1, Rank2, Rank3, Rank4, Rank5, Rank6, Shape};
pub use single::{SingleElement, UnitDim};
pub use squeeze::{SqueezableDim, Squeeze, Unsqueeze};
