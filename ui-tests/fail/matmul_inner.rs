use teenygrad::shape::{MatMulShape, Rank1, Rank2, Rank3, Shape};

fn matmul<A: MatMulShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    matmul(Rank2::<2, 3>::default(), Rank2::<4, 5>::default());
    matmul(Rank3::<8, 2, 3>::default(), Rank3::<8, 4, 5>::default());
    matmul(Rank2::<2, 3>::default(), Rank1::<4>::default());
}
