//! Distances in units in the last place, for the tests that hold a function to a bound in ulps.
//! Included by path (`#[path = "support/ulps.rs"] mod ulps;`), apart from the seeded-case
//! support, so a test file takes only what it uses.

/// `|got − want|` in units of `want`'s ulp in f32 (the spacing of f32 values around it).
pub fn ulps(got: f32, want: f64) -> f64 {
    let w = want as f32;
    let ulp = (f32::from_bits(w.abs().to_bits() + 1) - w.abs()) as f64;
    (got as f64 - want).abs() / ulp
}
