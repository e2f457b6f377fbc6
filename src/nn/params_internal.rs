//! Crate-internal access to a parameter's engine value, for optimizers.

use super::params::Param;
use crate::autograd::Var;

pub(crate) fn var_mut(p: &mut dyn Param) -> &mut Var {
    p.as_var_mut()
}
