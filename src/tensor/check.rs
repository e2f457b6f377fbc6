//! Checking values for NaN and infinities: a realization boundary that turns a silent numerical
//! failure into an error naming the element.

use super::{GradMode, Tensor};
use crate::error::{Error, Result};
use crate::shape::Shape;

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `Ok(())` if every element is finite; otherwise an [`Error::Data`] naming the first element
    /// (in row-major order) that is not: its location is `"element {index} of shape {dims:?}"`,
    /// `index` the row-major position, and its message `"is NaN"`, `"is +inf"` or `"is -inf"`.
    ///
    /// Realizes the tensor (a read, like [`to_vec`](Self::to_vec)); an empty tensor is finite.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let ok = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// assert!(ok.check_finite().is_ok());
    ///
    /// let bad = Tensor::from([[1.0, 0.0], [-1.0, 4.0]]).log(); // log(0) = -inf, log(-1) = NaN
    /// let err = bad.check_finite().unwrap_err();
    /// assert_eq!(err.to_string(), "element 1 of shape [2, 2]: is -inf");
    /// assert!(matches!(err, Error::Data { .. }));
    /// ```
    pub fn check_finite(&self) -> Result<()> {
        let first_bad = self
            .var
            .buf()
            .with_values(|values| values.iter().position(|x| !x.is_finite()).map(|i| (i, values[i])));
        match first_bad {
            None => Ok(()),
            Some((index, value)) => Err(Error::Data {
                location: format!("element {index} of shape {:?}", self.dims()),
                message: describe(value).to_string(),
            }),
        }
    }

    /// True if no element is NaN or infinite (realizes the tensor; an empty tensor is finite).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert!(Tensor::from([1.0, -2.5]).is_finite());
    /// assert!(!(Tensor::from([1.0, 0.0]).recip()).is_finite()); // 1/0 = +inf
    /// assert!(!Tensor::from([f32::NAN]).is_finite());
    /// ```
    pub fn is_finite(&self) -> bool {
        self.var
            .buf()
            .with_values(|values| values.iter().all(|x| x.is_finite()))
    }
}

/// The message for a value that is not finite.
fn describe(value: f32) -> &'static str {
    if value.is_nan() {
        "is NaN"
    } else if value > 0.0 {
        "is +inf"
    } else {
        "is -inf"
    }
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::prelude::*;

    fn data_error(result: crate::Result<()>) -> (String, String) {
        match result {
            Err(Error::Data { location, message }) => (location, message),
            other => panic!("expected a Data error, got {other:?}"),
        }
    }

    #[test]
    fn finite_values_pass() {
        let t = Tensor::from([[0.0, -0.0], [f32::MAX, f32::MIN_POSITIVE / 2.0]]);
        assert_eq!(t.check_finite(), Ok(()));
        assert!(t.is_finite());
        let scalar = Tensor::from(3.0);
        assert_eq!(scalar.check_finite(), Ok(()));
    }

    #[test]
    fn names_the_first_bad_element_row_major() {
        let t = Tensor::from([[1.0, 2.0, 3.0], [f32::INFINITY, f32::NAN, f32::NEG_INFINITY]]);
        assert_eq!(
            data_error(t.check_finite()),
            ("element 3 of shape [2, 3]".to_string(), "is +inf".to_string())
        );
        assert!(!t.is_finite());
        // Through a view (a transpose): the index is the row-major position in the view.
        assert_eq!(
            data_error(t.t().check_finite()),
            ("element 1 of shape [3, 2]".to_string(), "is +inf".to_string())
        );
        let nan = Tensor::from([f32::NAN, f32::INFINITY]);
        assert_eq!(data_error(nan.check_finite()).1, "is NaN");
        let neg = Tensor::from([1.0, f32::NEG_INFINITY]);
        assert_eq!(
            data_error(neg.check_finite()),
            ("element 1 of shape [2]".to_string(), "is -inf".to_string())
        );
        assert_eq!(
            data_error(Tensor::from(f32::NAN).check_finite()),
            ("element 0 of shape []".to_string(), "is NaN".to_string())
        );
    }

    #[test]
    fn realizes_lazy_results_and_sees_overflow() {
        // exp(100) overflows f32: the lazy graph is computed by the check.
        let big = Tensor::from([1.0, 100.0]).exp();
        assert_eq!(
            data_error(big.check_finite()),
            ("element 1 of shape [2]".to_string(), "is +inf".to_string())
        );
        // A padded, broadcast view of finite values is finite.
        let padded = Tensor::from([1.0, 2.0]).pad::<Rank1<5>>(&[(2, 1)]).unwrap();
        assert!(padded.broadcast::<Rank2<3, 5>>().is_finite());
        // Tracked tensors check their values too, and the check does not disturb backward.
        let x = Tensor::from([1.0, 2.0]).requires_grad();
        let y = (&x * &x).sum_all();
        assert!(y.is_finite());
        y.backward();
        assert_eq!(x.grad().unwrap().to_array(), [2.0, 4.0]);
    }

    #[test]
    fn empty_and_runtime_shapes() {
        let empty = Tensor::from_vec(vec![], (0usize, Const::<3>)).unwrap();
        assert_eq!(empty.check_finite(), Ok(()));
        assert!(empty.is_finite());
        let t = Tensor::from_vec(vec![0.0, 1.0, f32::NAN, 2.0], (2usize, 2usize)).unwrap();
        assert_eq!(
            data_error(t.check_finite()),
            ("element 2 of shape [2, 2]".to_string(), "is NaN".to_string())
        );
    }
}
