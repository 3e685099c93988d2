//! Algorithm choice: every forward algorithm is tried for each op (the fused
//! conv + bias + activation, and the convolution alone); those that cuDNN accepts with a
//! workspace within the cap are timed, and the fastest is kept.
//!
//! Not `cudnnFindConvolutionForwardAlgorithmEx`: it times `cudnnConvolutionForward` only, and
//! the fused op supports fewer algorithms (with the identity activation only
//! `IMPLICIT_PRECOMP_GEMM`), so each op is timed as it will run.

use cudarc::cudnn::sys::cudnnConvolutionFwdAlgo_t as Algo;

/// Every forward algorithm, in cuDNN's numbering.
pub const ALL: [Algo; 8] = [
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
];

/// Short name: `implicit_gemm`, `implicit_precomp_gemm`, `gemm`, `direct`, `fft`,
/// `fft_tiling`, `winograd`, `winograd_nonfused`.
pub fn name(a: Algo) -> &'static str {
    match a {
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM => "implicit_gemm",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM => "implicit_precomp_gemm",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_GEMM => "gemm",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_DIRECT => "direct",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT => "fft",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING => "fft_tiling",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD => "winograd",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED => "winograd_nonfused",
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_COUNT => "count",
    }
}

/// Whether `a` computes the convolution as sums of products (an implicit or explicit GEMM, or
/// direct), whose rounding the float64 reference's bound covers; FFT and Winograd transform
/// the operands first, and their error is not bounded by `Σ|terms|` alone.
pub fn is_sum_of_products(a: Algo) -> bool {
    matches!(
        a,
        Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
            | Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
            | Algo::CUDNN_CONVOLUTION_FWD_ALGO_GEMM
            | Algo::CUDNN_CONVOLUTION_FWD_ALGO_DIRECT
    )
}

/// Which cuDNN call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Op {
    /// `cudnnConvolutionBiasActivationForward`: `y = act(conv(x, w) + bias)`.
    Fused,
    /// `cudnnConvolutionForward`: `y = conv(x, w)`.
    ConvOnly,
}

impl Op {
    /// `fused` / `conv_only`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Fused => "fused",
            Op::ConvOnly => "conv_only",
        }
    }
}

/// What trying one algorithm for one op gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Ran: the median of its timed runs, milliseconds.
    Ran(f64),
    /// Its workspace exceeds the cap.
    OverCap,
    /// cuDNN refused it (the workspace query or the call): the status.
    Refused(String),
}

/// One algorithm tried for one op.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The op.
    pub op: Op,
    /// The algorithm.
    pub algo: Algo,
    /// Its workspace, bytes (0 when the query failed).
    pub workspace: usize,
    /// What happened.
    pub outcome: Outcome,
}

impl Trial {
    /// `fused implicit_precomp_gemm: 0.123 ms (ws 4096 B)`.
    pub fn describe(&self) -> String {
        let what = match &self.outcome {
            Outcome::Ran(ms) => format!("{ms:.4} ms"),
            Outcome::OverCap => "workspace over the cap".into(),
            Outcome::Refused(s) => format!("refused: {s}"),
        };
        format!(
            "{} {}: {what} (workspace {} B)",
            self.op.name(),
            name(self.algo),
            self.workspace
        )
    }
}

/// The fastest algorithm that ran for `op` (ties: the smaller workspace, then cuDNN's order);
/// `None` when none ran.
pub fn fastest(trials: &[Trial], op: Op) -> Option<&Trial> {
    trials
        .iter()
        .filter(|t| t.op == op)
        .filter_map(|t| match t.outcome {
            Outcome::Ran(ms) if ms.is_finite() => Some((ms, t)),
            _ => None,
        })
        .min_by(|(a, ta), (b, tb)| {
            a.total_cmp(b)
                .then(ta.workspace.cmp(&tb.workspace))
                .then((ta.algo as u32).cmp(&(tb.algo as u32)))
        })
        .map(|(_, t)| t)
}

/// The workspace the chosen algorithms need: the larger of the two.
pub fn workspace_for(chosen: &[&Trial]) -> usize {
    chosen.iter().map(|t| t.workspace).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(op: Op, algo: Algo, ws: usize, outcome: Outcome) -> Trial {
        Trial {
            op,
            algo,
            workspace: ws,
            outcome,
        }
    }

    #[test]
    fn every_algorithm_is_listed_once_with_its_own_name() {
        assert_eq!(ALL.len(), Algo::CUDNN_CONVOLUTION_FWD_ALGO_COUNT as usize);
        for (i, a) in ALL.iter().enumerate() {
            assert_eq!(*a as usize, i, "cuDNN's numbering");
        }
        let names: std::collections::HashSet<_> = ALL.iter().map(|&a| name(a)).collect();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(ALL.iter().filter(|&&a| is_sum_of_products(a)).count(), 4);
    }

    #[test]
    fn the_fastest_algorithm_that_ran_wins_per_op() {
        use Algo::*;
        let trials = vec![
            t(
                Op::Fused,
                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                0,
                Outcome::Ran(0.30),
            ),
            t(
                Op::Fused,
                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                4096,
                Outcome::Ran(0.20),
            ),
            t(
                Op::Fused,
                CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                1 << 31,
                Outcome::OverCap,
            ),
            t(
                Op::Fused,
                CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
                0,
                Outcome::Refused("NOT_SUPPORTED".into()),
            ),
            t(
                Op::ConvOnly,
                CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                1 << 20,
                Outcome::Ran(0.10),
            ),
            t(
                Op::ConvOnly,
                CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
                0,
                Outcome::Ran(f64::NAN),
            ),
        ];
        let f = fastest(&trials, Op::Fused).unwrap();
        assert_eq!(f.algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
        let c = fastest(&trials, Op::ConvOnly).unwrap();
        assert_eq!(c.algo, CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
        assert_eq!(workspace_for(&[f, c]), 1 << 20);
        assert_eq!(workspace_for(&[]), 0);
        // Ties go to the smaller workspace.
        let tie = vec![
            t(
                Op::Fused,
                CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                64,
                Outcome::Ran(0.5),
            ),
            t(
                Op::Fused,
                CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
                8,
                Outcome::Ran(0.5),
            ),
        ];
        assert_eq!(
            fastest(&tie, Op::Fused).unwrap().algo,
            CUDNN_CONVOLUTION_FWD_ALGO_DIRECT
        );
        // Nothing ran: none.
        assert!(fastest(&trials[2..4], Op::Fused).is_none());
        assert!(fastest(&trials, Op::ConvOnly).is_some());
        assert!(trials[3].describe().contains("refused: NOT_SUPPORTED"));
        assert!(trials[1]
            .describe()
            .starts_with("fused implicit_precomp_gemm: 0.2000 ms"));
    }
}
