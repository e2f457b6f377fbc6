//! Activations as modules (parameter-free), for sequential composition.

use super::params::{Param, Params};
use super::{Detach, Init, Module};
use crate::shape::Shape;
use crate::tensor::{GradMode, Tensor};

macro_rules! activation {
    ($(#[$doc:meta])* $name:ident => $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;

        #[diagnostic::do_not_recommend]
        impl<S: Shape, G: GradMode> Module<Tensor<S, G>> for $name {
            type Output = Tensor<S, G>;
            fn forward(&self, x: Tensor<S, G>) -> Tensor<S, G> {
                x.$method()
            }
        }

        impl Init for $name {
            fn init<R: rand::Rng + ?Sized>(_: &mut R) -> Self {
                $name
            }
        }

        impl Params for $name {
            fn visit(&self, _: &str, _: &mut dyn FnMut(&str, &dyn Param)) {}
            fn visit_mut(&mut self, _: &str, _: &mut dyn FnMut(&str, &mut dyn Param)) {}
        }

        impl Detach for $name {
            type Detached = $name;
            fn detached(&self) -> $name {
                $name
            }
        }
    };
}

activation!(
    /// `max(x, 0)`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Module, Relu};
    /// assert_eq!(Relu.forward(Tensor::from([-1.0, 1.0])).to_array(), [0.0, 1.0]);
    /// ```
    Relu => relu
);
activation!(
    /// The logistic sigmoid.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Module, Sigmoid};
    /// assert_eq!(Sigmoid.forward(Tensor::from([0.0])).to_array(), [0.5]);
    /// ```
    Sigmoid => sigmoid
);
activation!(
    /// The hyperbolic tangent.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Module, Tanh};
    /// assert_eq!(Tanh.forward(Tensor::from([0.0])).to_array(), [0.0]);
    /// ```
    Tanh => tanh
);
activation!(
    /// GELU (erf form).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Gelu, Module};
    /// assert_eq!(Gelu.forward(Tensor::from([0.0])).to_array(), [0.0]);
    /// ```
    Gelu => gelu
);
activation!(
    /// GELU in its tanh form ([`Tensor::gelu_tanh`]), as PyTorch's
    /// `nn.GELU(approximate="tanh")`: the activation of models trained with it (GPT-2's).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{GeluTanh, Module};
    /// assert_eq!(GeluTanh.forward(Tensor::from([0.0])).to_array(), [0.0]);
    /// ```
    GeluTanh => gelu_tanh
);
activation!(
    /// SiLU (swish), `x·sigmoid(x)`, as PyTorch's `nn.SiLU`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Module, Silu};
    /// assert_eq!(Silu.forward(Tensor::from([0.0])).to_array(), [0.0]);
    /// ```
    Silu => silu
);
activation!(
    /// `log(1 + eˣ)` ([`Tensor::softplus`]), as PyTorch's `nn.Softplus()`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Module, Softplus};
    /// assert_eq!(Softplus.forward(Tensor::from([100.0])).to_array(), [100.0]);
    /// ```
    Softplus => softplus
);
