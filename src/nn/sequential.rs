//! Sequential composition: a tuple of up to 12 modules (as far as the standard library's traits
//! for tuples go) runs them in order. Parameters are named by position (`"0.weight"`,
//! `"2.bias"`), as PyTorch's `nn.Sequential` names them; a longer model nests tuples, whose
//! names then nest too (`"1.0.weight"`). An array or a `Vec` of one module type runs its
//! modules in turn, each giving what it takes (repeated blocks), named `"0…"`, `"1…"` too.

use super::params::{Param, Params, join};
use super::{Detach, Init, Module};

/// `Module` for a tuple: each module's output type is the next one's input.
macro_rules! chain {
    ($first:ident $fi:tt $(, $prev:ident => $m:ident $i:tt)*; $last:ident) => {
        impl<X, $first $(, $m)*> Module<X> for ($first, $($m,)*)
        where
            $first: Module<X>,
            $($m: Module<$prev::Output>,)*
        {
            type Output = $last::Output;
            // A module that panics on its input (an embedding index out of range) reports the
            // line that called the model, not this one.
            #[track_caller]
            fn forward(&self, x: X) -> Self::Output {
                let x = self.$fi.forward(x);
                $(let x = self.$i.forward(x);)*
                x
            }
        }
    };
}

chain!(A 0; A);
chain!(A 0, A => B 1; B);
chain!(A 0, A => B 1, B => C 2; C);
chain!(A 0, A => B 1, B => C 2, C => D 3; D);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4; E);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5; F);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5, F => G 6; G);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5, F => G 6, G => H 7; H);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5, F => G 6, G => H 7, H => I 8; I);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5, F => G 6, G => H 7, H => I 8, I => J 9; J);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5, F => G 6, G => H 7, H => I 8, I => J 9, J => K 10; K);
chain!(A 0, A => B 1, B => C 2, C => D 3, D => E 4, E => F 5, F => G 6, G => H 7, H => I 8, I => J 9, J => K 10, K => L 11; L);

/// `Init`, `Params` and `Detach` for a tuple, element by element (for a list of one module
/// type, `Vec` and arrays, `Params` is in `params.rs`).
macro_rules! elementwise_traits {
    ($($m:ident $i:tt),+) => {
        impl<$($m: Init),+> Init for ($($m,)+) {
            fn init<R: rand::Rng + ?Sized>(rng: &mut R) -> Self {
                ($($m::init(rng),)+)
            }
        }

        impl<$($m: Params),+> Params for ($($m,)+) {
            fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
                $(self.$i.visit(&join(prefix, stringify!($i)), f);)+
            }
            fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
                $(self.$i.visit_mut(&join(prefix, stringify!($i)), f);)+
            }
            fn set_training(&self, training: bool) {
                $(self.$i.set_training(training);)+
            }
        }

        impl<$($m: Detach),+> Detach for ($($m,)+) {
            type Detached = ($($m::Detached,)+);
            fn detached(&self) -> Self::Detached {
                ($(self.$i.detached(),)+)
            }
        }
    };
}

elementwise_traits!(A 0);
elementwise_traits!(A 0, B 1);
elementwise_traits!(A 0, B 1, C 2);
elementwise_traits!(A 0, B 1, C 2, D 3);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
elementwise_traits!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// `N` modules, each initialized in turn from the one generator (so they differ).
impl<M: Init, const N: usize> Init for [M; N] {
    fn init<R: rand::Rng + ?Sized>(rng: &mut R) -> Self {
        std::array::from_fn(|_| M::init(rng))
    }
}

impl<M: Detach, const N: usize> Detach for [M; N] {
    type Detached = [M::Detached; N];
    fn detached(&self) -> Self::Detached {
        std::array::from_fn(|i| self[i].detached())
    }
}

impl<M: Detach> Detach for Vec<M> {
    type Detached = Vec<M::Detached>;
    fn detached(&self) -> Self::Detached {
        self.iter().map(Detach::detached).collect()
    }
}

/// Modules of one type applied in turn, as a PyTorch `nn.Sequential` of repeated blocks: each
/// gives what it takes (a residual block, a square layer with its activation). No modules pass
/// the input through. Arrays and `Vec`s of modules are such lists.
#[diagnostic::do_not_recommend]
impl<X, M: Module<X, Output = X>> Module<X> for [M] {
    type Output = X;
    #[track_caller]
    fn forward(&self, mut x: X) -> X {
        // A loop, not a fold: a closure would report a module's panic here, not at the caller.
        for m in self {
            x = m.forward(x);
        }
        x
    }
}

#[diagnostic::do_not_recommend]
impl<X, M: Module<X, Output = X>, const N: usize> Module<X> for [M; N] {
    type Output = X;
    #[track_caller]
    fn forward(&self, x: X) -> X {
        self[..].forward(x)
    }
}

#[diagnostic::do_not_recommend]
impl<X, M: Module<X, Output = X>> Module<X> for Vec<M> {
    type Output = X;
    #[track_caller]
    fn forward(&self, x: X) -> X {
        self[..].forward(x)
    }
}
