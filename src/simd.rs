//! Runtime SIMD dispatch: a loop compiled once for the baseline target would use SSE2 only, so
//! hot loops are compiled again for AVX-512 and AVX2, and the version the CPU supports is chosen
//! at run time. Rust never fuses a multiply and an add on its own, so every version rounds alike.

/// Defines a function whose body is compiled three times (AVX-512F, AVX2, baseline) and runs the
/// best version the CPU supports (detected at run time). Non-generic functions only: the kernels'
/// `execute`, generic over how it reads operands, dispatches the same way by hand.
macro_rules! simd_dispatch {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$attr])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F, checked just above.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

pub(crate) use simd_dispatch;
