//! Activations as modules (parameter-free), for sequential composition.

use super::params::{Param, Params};
use super::{Detach, Init, Module};
use crate::shape::Shape;
use crate::tensor::{GradMode, Tensor};

/// `Init`, `Params` and `Detach` of a layer without parameters: its settings are copied.
macro_rules! no_parameters {
    ($name:ident) => {
        impl Init for $name {
            fn init<R: rand::Rng + ?Sized>(_: &mut R) -> Self {
                $name::default()
            }
        }

        impl Params for $name {
            fn visit(&self, _: &str, _: &mut dyn FnMut(&str, &dyn Param)) {}
            fn visit_mut(&mut self, _: &str, _: &mut dyn FnMut(&str, &mut dyn Param)) {}
        }

        impl Detach for $name {
            type Detached = $name;
            fn detached(&self) -> $name {
                *self
            }
        }
    };
}

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

        no_parameters!($name);
    };
    // One setting, an `f32` with PyTorch's default.
    ($(#[$doc:meta])* $name:ident { $(#[$field_doc:meta])* $field:ident = $default:expr } => $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            $(#[$field_doc])*
            pub $field: f32,
        }

        impl $name {
            #[doc = concat!("The layer with `", stringify!($field), "` set (`default()` gives ", stringify!($default), ").")]
            pub fn new($field: f32) -> Self {
                $name { $field }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $field: $default }
            }
        }

        #[diagnostic::do_not_recommend]
        impl<S: Shape, G: GradMode> Module<Tensor<S, G>> for $name {
            type Output = Tensor<S, G>;
            fn forward(&self, x: Tensor<S, G>) -> Tensor<S, G> {
                x.$method(self.$field)
            }
        }

        no_parameters!($name);
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
activation!(
    /// Leaky ReLU ([`Tensor::leaky_relu`]), as PyTorch's `nn.LeakyReLU(negative_slope)`:
    /// `Default` and `Init` give its slope, 0.01.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{LeakyRelu, Module};
    /// assert_eq!(LeakyRelu::default().forward(Tensor::from([-2.0, 3.0])).to_array(), [-0.02, 3.0]);
    /// assert_eq!(LeakyRelu::new(0.5).forward(Tensor::from([-2.0])).to_array(), [-1.0]);
    /// ```
    LeakyRelu {
        /// The slope below zero.
        slope = 0.01
    } => leaky_relu
);
activation!(
    /// ELU ([`Tensor::elu`]), as PyTorch's `nn.ELU`: `Default` and `Init` give its `alpha`, 1.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use teenygrad::nn::{Elu, Module};
    /// assert_eq!(Elu::default().forward(Tensor::from([2.0])).to_array(), [2.0]);
    /// assert_eq!(Elu::new(2.0).forward(Tensor::from([f32::NEG_INFINITY])).to_array(), [-2.0]);
    /// ```
    Elu {
        /// The value approached far below zero is `-alpha`.
        alpha = 1.0
    } => elu
);
