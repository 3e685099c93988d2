//! The validation cases — on the GPU (every kernel the device runs and the selected one, at
//! odd lengths, masks, head groupings and layouts; [`Scale::Full`] adds long sequences), in
//! the simulator (tiny shapes, every ladder record in both dtypes) — and the family's
//! [`crate::families::Family`] implementation (with the family's command line, [`cli`]).

use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::families::{Case, Scale};

use super::*;

/// How a case lays Q, K, V and O out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrangement {
    /// Every tensor packed `(batch, seq, heads, head_dim)`.
    Contiguous,
    /// Q, K, V slices of one packed QKV tensor (seq stride `(heads_q + 2·heads_kv)·d`).
    PackedQkv,
    /// Padding between Q's and O's rows and batches, K with padded heads, V stored
    /// `(batch, heads, seq, head_dim)`.
    Strided,
}

impl Arrangement {
    /// The layout of `shape` so arranged.
    pub fn layout(self, s: &Shape) -> Layout {
        match self {
            Arrangement::Contiguous => Layout::contiguous(s),
            Arrangement::PackedQkv => Layout::packed_qkv(s),
            Arrangement::Strided => {
                let d = s.head_dim;
                let (q_row, o_row) = (s.heads_q * d + 8, s.heads_q * d + 16);
                Layout {
                    q: Strides {
                        batch: s.seq_q * q_row + 24,
                        seq: q_row,
                        head: d,
                    },
                    k: Strides {
                        batch: s.seq_kv * s.heads_kv * (d + 8),
                        seq: s.heads_kv * (d + 8),
                        head: d + 8,
                    },
                    v: Strides {
                        batch: s.heads_kv * s.seq_kv * d,
                        seq: d,
                        head: s.seq_kv * d,
                    },
                    o: Strides {
                        batch: s.seq_q * o_row + 8,
                        seq: o_row,
                        head: d,
                    },
                }
            }
        }
    }

    /// `packed-qkv` / `strided` (empty for contiguous), for case names.
    pub fn tag(self) -> &'static str {
        match self {
            Arrangement::Contiguous => "",
            Arrangement::PackedQkv => " packed-qkv",
            Arrangement::Strided => " strided",
        }
    }
}

/// One validation case: a problem and whether Q, K, V share one packed buffer.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The problem.
    pub problem: Problem,
    /// How it is laid out.
    pub arrangement: Arrangement,
}

impl Spec {
    /// `shape` in `dtype`, arranged so.
    pub fn new(dtype: DType, shape: Shape, arrangement: Arrangement) -> Self {
        Self {
            problem: Problem::new(dtype, shape).with_layout(arrangement.layout(&shape)),
            arrangement,
        }
    }

    /// The case's shape text.
    pub fn describe(&self) -> String {
        format!("{}{}", self.problem.shape.describe(), self.arrangement.tag())
    }

    /// Runs the case on `backend`.
    pub fn validate(&self, backend: &Backend, variant: Option<Variant>, seed: u64) -> Result<Checked> {
        let packed = self.arrangement == Arrangement::PackedQkv;
        validate(backend, variant, &self.problem, packed, seed)
    }
}

type Row = (usize, usize, usize, usize, usize, bool, Arrangement);

/// `(batch, seq_q, seq_kv, heads_q, heads_kv, causal, arrangement)` of the GPU's quick cases:
/// lengths 1, primes and tile ± 1; causal with `seq_q < seq_kv` and `seq_q > seq_kv` (rows
/// that see nothing); GQA and MQA; the three arrangements; batch > 1.
const GPU_QUICK: &[Row] = &[
    (1, 1, 1, 1, 1, false, Arrangement::Contiguous),
    (1, 1, 1, 1, 1, true, Arrangement::Contiguous),
    (2, 17, 17, 4, 4, false, Arrangement::Contiguous),
    (2, 17, 17, 4, 4, true, Arrangement::PackedQkv),
    (1, 127, 129, 8, 2, true, Arrangement::Contiguous),
    (1, 129, 127, 8, 1, true, Arrangement::Contiguous),
    (2, 200, 65, 2, 2, true, Arrangement::Strided),
    (1, 65, 300, 4, 4, true, Arrangement::Contiguous),
    (3, 128, 128, 2, 1, false, Arrangement::Strided),
    (1, 64, 64, 2, 2, true, Arrangement::Contiguous),
    (1, 63, 65, 2, 2, false, Arrangement::Contiguous),
    (1, 1, 513, 8, 2, true, Arrangement::Contiguous),
    (2, 300, 300, 6, 3, true, Arrangement::PackedQkv),
    (1, 257, 1031, 2, 1, false, Arrangement::Strided),
];

/// The long sequences [`Scale::Full`] adds.
const GPU_FULL: &[Row] = &[
    (2, 2048, 2048, 16, 16, true, Arrangement::Contiguous),
    (1, 4096, 4096, 8, 2, false, Arrangement::Contiguous),
    (4, 1000, 3000, 8, 1, true, Arrangement::Strided),
    (1, 8192, 8192, 4, 4, true, Arrangement::PackedQkv),
    (1, 3001, 1999, 4, 2, true, Arrangement::Contiguous),
];

fn specs(rows: &[Row], dims: &[usize]) -> Vec<Spec> {
    let mut v = Vec::new();
    for ty in [DType::F16, DType::Bf16] {
        for &d in dims {
            for &(b, nq, nkv, hq, hkv, causal, arr) in rows {
                v.push(Spec::new(ty, Shape::new(b, nq, nkv, hq, hkv, d).with_causal(causal), arr));
            }
            // A peaked softmax: scale 1 (scores spread ~1.3·√d).
            let s = Shape::new(1, 97, 200, 2, 2, d).with_causal(true).with_scale(1.0);
            v.push(Spec::new(ty, s, Arrangement::Contiguous));
        }
    }
    v
}

/// The GPU's cases at `scale`.
pub fn gpu_cases(scale: Scale) -> Vec<Spec> {
    let mut v = specs(GPU_QUICK, &head_dims());
    if scale == Scale::Full {
        v.extend(specs(GPU_FULL, &head_dims()));
    }
    v
}

/// The simulator's cases: tiny (it runs every thread of every block on the CPU), yet off
/// every tile edge (1, 17, 64, 65, 130), causal both ways (`seq_q > seq_kv` leaves rows with
/// nothing to see), GQA, MQA, batch 2, a packed QKV tensor, strided tensors, and a peaked
/// softmax (scale 1) over three key tiles. (`tests/attention.rs` runs more.)
pub fn sim_cases() -> Vec<Spec> {
    let rows: &[Row] = &[
        (1, 1, 1, 1, 1, false, Arrangement::Contiguous),
        (2, 17, 65, 4, 2, true, Arrangement::Contiguous),
        (1, 130, 64, 2, 1, true, Arrangement::Strided),
        (1, 65, 65, 2, 2, false, Arrangement::PackedQkv),
    ];
    let mut v = Vec::new();
    for ty in [DType::F16, DType::Bf16] {
        for d in head_dims() {
            for &(b, nq, nkv, hq, hkv, causal, arr) in rows {
                v.push(Spec::new(ty, Shape::new(b, nq, nkv, hq, hkv, d).with_causal(causal), arr));
            }
            let s = Shape::new(1, 64, 130, 2, 2, d).with_causal(true).with_scale(1.0);
            v.push(Spec::new(ty, s, Arrangement::Contiguous));
        }
    }
    v
}

/// Whether the GPU cases run `naive` at `p` (its scratch is `4·B·H·Nq·Nkv` bytes, and it is
/// slow): up to 1 GiB of scratch.
fn naive_fits(p: &Problem) -> bool {
    (p.shape.lse_len() as f64) * (p.shape.seq_kv as f64) * 4.0 <= (1u64 << 30) as f64
}

/// Attention as a [`crate::families::Family`].
pub struct Attention;

impl crate::families::Family for Attention {
    fn name(&self) -> &'static str {
        rustile_kernels::attention::FAMILY.name
    }

    fn about(&self) -> &'static str {
        rustile_kernels::attention::FAMILY.about
    }

    fn command(&self) -> Option<clap::Command> {
        Some(<cli::AttentionCli as clap::CommandFactory>::command())
    }

    fn check_command(&self, matches: &clap::ArgMatches) -> std::result::Result<(), clap::Error> {
        <cli::AttentionCli as clap::FromArgMatches>::from_arg_matches(matches).map(|_| ())
    }

    fn run_command(&self, matches: &clap::ArgMatches) -> Result<()> {
        cli::main(matches)
    }

    fn fuzz(
        &self,
        backend: &Backend,
        rng: &mut dyn rand::RngCore,
    ) -> Option<crate::families::fuzz::Fuzzed> {
        super::fuzz::case(backend, rng)
    }

    fn cases(&self, backend: &Backend, scale: Scale) -> Vec<Case> {
        let (target, specs) = match backend {
            Backend::Gpu(gpu) => (Target::Gpu(gpu.flavour()), gpu_cases(scale)),
            Backend::Simulator(_) => (Target::Simulator, sim_cases()),
        };
        let mut out = Vec::new();
        for spec in specs {
            let p = spec.problem;
            let d = p.shape.head_dim;
            let mut runs: Vec<Option<Variant>> = Variant::all()
                .into_iter()
                .filter(|v| v.supports(target, &p, None).is_ok())
                .filter(|v| *v != Variant::naive() || naive_fits(&p))
                .map(Some)
                .collect();
            if target != Target::Simulator {
                runs.push(None); // the selected kernel, as the front door runs it
            }
            for v in runs {
                let name = v.map_or_else(|| "attention/auto".to_string(), |v| v.kernel_name(d));
                out.push(Case::new(name, p.dtype, spec.describe(), move |backend: &Backend, seed| {
                    let same = matches!(
                        (backend, target),
                        (Backend::Simulator(_), Target::Simulator) | (Backend::Gpu(_), Target::Gpu(_))
                    );
                    if !same {
                        return Err(Error::Usage("a case of one back end given the other".into()));
                    }
                    spec.validate(backend, v, seed).map(|_| ())
                }));
            }
        }
        out
    }
}
