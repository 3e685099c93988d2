//! Macros the kernels share.

/// `unroll!(N, j, { body })` repeats `body` with `j: usize` = 0, 1, …, N − 1 (N = 2, 4, 8, 16, 32
/// or 64), so arrays indexed by `j` stay in registers however large the body is.
#[macro_export]
macro_rules! unroll {
    (2, $j:ident, $body:block) => { $crate::unroll!(@at 0, $j, $body); $crate::unroll!(@at 1, $j, $body); };
    (4, $j:ident, $body:block) => { $crate::unroll!(@at 0, $j, $body); $crate::unroll!(@at 1, $j, $body); $crate::unroll!(@at 2, $j, $body); $crate::unroll!(@at 3, $j, $body); };
    (8, $j:ident, $body:block) => { $crate::unroll!(@4 0, $j, $body); $crate::unroll!(@4 4, $j, $body); };
    (16, $j:ident, $body:block) => { $crate::unroll!(@8 0, $j, $body); $crate::unroll!(@8 8, $j, $body); };
    (32, $j:ident, $body:block) => { $crate::unroll!(@16 0, $j, $body); $crate::unroll!(@16 16, $j, $body); };
    (64, $j:ident, $body:block) => { $crate::unroll!(@16 0, $j, $body); $crate::unroll!(@16 16, $j, $body); $crate::unroll!(@16 32, $j, $body); $crate::unroll!(@16 48, $j, $body); };
    (@16 $o:expr, $j:ident, $body:block) => { $crate::unroll!(@8 $o, $j, $body); $crate::unroll!(@8 $o + 8, $j, $body); };
    (@8 $o:expr, $j:ident, $body:block) => { $crate::unroll!(@4 $o, $j, $body); $crate::unroll!(@4 $o + 4, $j, $body); };
    (@4 $o:expr, $j:ident, $body:block) => { $crate::unroll!(@at $o, $j, $body); $crate::unroll!(@at $o + 1, $j, $body); $crate::unroll!(@at $o + 2, $j, $body); $crate::unroll!(@at $o + 3, $j, $body); };
    (@at $o:expr, $j:ident, $body:block) => {{ #[allow(clippy::identity_op, clippy::erasing_op)] let $j: usize = $o; $body }};
}
