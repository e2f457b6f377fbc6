//! Shapes: runtime shape arithmetic, and the type-level vocabulary that makes shape mistakes
//! compile errors.

pub mod runtime;
