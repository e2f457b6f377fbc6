//! The hash maps of the scheduler and of backward.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative (Fx-style) hasher. The keys are node ids, views and record addresses, hashed
/// within one realization or backward pass, so SipHash's protection against chosen keys buys
/// nothing and costs time.
#[derive(Default)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // The product's high bits are its well-mixed ones; the table indexes by the low bits, and
        // addresses (multiples of 8) would otherwise leave those zero.
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Slices of integers (a view's shape and strides) arrive here as bytes: mix 8 at a time.
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.write_u64(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;
