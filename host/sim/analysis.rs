//! Memory-access analysis: what the hardware would do with each warp-wide access.
//!
//! - Global: the 32-byte sectors a warp instruction touches against the fewest that could hold
//!   the distinct bytes it asks for (`efficiency = distinct bytes / (32 · sectors)`; 100 % for a
//!   coalesced 4-byte-per-lane access, 12.5 % when every lane needs its own sector).
//! - Shared: wavefronts per warp instruction. A wavefront serves at most one 4-byte word per
//!   bank (32 banks, word `addr / 4` in bank `word mod 32`; lanes reading the same word share
//!   it). Accesses wider than 4 bytes are served a quarter- or half-warp at a time (128 bytes
//!   per wavefront at best). `conflict degree = wavefronts / ideal wavefronts`.

use std::collections::{BTreeMap, HashMap};

use rustile_kernels::gpu::host::{Site, Space};

/// One access by one thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    pub warp: u32,
    pub lane: u32,
    pub site: Site,
    pub occurrence: u32,
    pub space: Space,
    pub addr: u64,
    pub bytes: u32,
    pub store: bool,
}

/// Totals of one instruction site (a source line's load or store).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SiteStats {
    /// `file:line:column` in the kernel source.
    pub site: String,
    /// `global` or `shared`.
    pub space: &'static str,
    /// `load` or `store`.
    pub kind: &'static str,
    /// Warp-wide instructions executed.
    pub warp_instructions: u64,
    /// Lanes that took part, summed.
    pub lane_accesses: u64,
    /// Distinct bytes asked for, summed over instructions.
    pub bytes: u64,
    /// Global: sectors touched. Shared: wavefronts.
    pub transactions: u64,
    /// Global: fewest sectors for those bytes. Shared: fewest wavefronts.
    pub ideal: u64,
    /// Shared: the worst conflict degree of one instruction.
    pub worst_degree: u64,
}

impl SiteStats {
    /// Global: distinct bytes / sector bytes. Shared: ideal / wavefronts.
    pub fn efficiency(&self) -> f64 {
        match self.space {
            "global" => self.bytes as f64 / (32.0 * self.transactions.max(1) as f64),
            _ => self.ideal as f64 / self.transactions.max(1) as f64,
        }
    }

    /// Shared: average conflict degree (1 = conflict-free).
    pub fn conflict_degree(&self) -> f64 {
        self.transactions as f64 / self.ideal.max(1) as f64
    }
}

/// Statistics of every access site over the launches analysed.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    sites: BTreeMap<(String, &'static str, &'static str), SiteStats>,
}

impl Analysis {
    pub(crate) fn add_block(&mut self, accesses: &[Access]) {
        type Key = (u32, usize, u32, bool, Space);
        let mut instrs: HashMap<Key, Vec<&Access>> = HashMap::new();
        for a in accesses {
            let key = (
                a.warp,
                a.site as *const _ as usize,
                a.occurrence,
                a.store,
                a.space,
            );
            instrs.entry(key).or_default().push(a);
        }
        for lanes in instrs.values() {
            let a0 = lanes[0];
            let space = match a0.space {
                Space::Global => "global",
                Space::Shared => "shared",
            };
            let kind = if a0.store { "store" } else { "load" };
            let site = format!("{}:{}:{}", a0.site.file(), a0.site.line(), a0.site.column());
            let s = self
                .sites
                .entry((site.clone(), space, kind))
                .or_insert_with(|| SiteStats {
                    site,
                    space,
                    kind,
                    ..Default::default()
                });
            s.warp_instructions += 1;
            s.lane_accesses += lanes.len() as u64;
            let (bytes, transactions, ideal) = match a0.space {
                Space::Global => global_sectors(lanes),
                Space::Shared => shared_wavefronts(lanes),
            };
            s.bytes += bytes;
            s.transactions += transactions;
            s.ideal += ideal;
            s.worst_degree = s.worst_degree.max(transactions.div_ceil(ideal.max(1)));
        }
    }

    /// Every site, sorted by source location.
    pub fn sites(&self) -> Vec<&SiteStats> {
        self.sites.values().collect()
    }

    /// Totals over all sites of `space` and `kind`: (bytes, transactions, ideal).
    pub fn totals(&self, space: &str, kind: &str) -> Option<SiteStats> {
        let mut t = SiteStats {
            site: "total".into(),
            space: if space == "global" {
                "global"
            } else {
                "shared"
            },
            kind: if kind == "load" { "load" } else { "store" },
            ..Default::default()
        };
        let mut any = false;
        for s in self
            .sites
            .values()
            .filter(|s| s.space == space && s.kind == kind)
        {
            any = true;
            t.warp_instructions += s.warp_instructions;
            t.lane_accesses += s.lane_accesses;
            t.bytes += s.bytes;
            t.transactions += s.transactions;
            t.ideal += s.ideal;
            t.worst_degree = t.worst_degree.max(s.worst_degree);
        }
        any.then_some(t)
    }

    /// A markdown table of every site, then the totals.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| site | space | kind | warp instrs | efficiency | sectors or wavefronts / instr | conflict degree (avg / worst) |\n\
             | --- | --- | --- | ---: | ---: | ---: | --- |\n",
        );
        let rows = self.sites().into_iter().cloned().chain(
            [
                ("global", "load"),
                ("global", "store"),
                ("shared", "load"),
                ("shared", "store"),
            ]
            .into_iter()
            .filter_map(|(s, k)| self.totals(s, k)),
        );
        for s in rows {
            let degree = if s.space == "shared" {
                format!("{:.2} / {}", s.conflict_degree(), s.worst_degree)
            } else {
                "-".into()
            };
            out += &format!(
                "| {} | {} | {} | {} | {:.1} % | {:.2} | {} |\n",
                s.site,
                s.space,
                s.kind,
                s.warp_instructions,
                100.0 * s.efficiency(),
                s.transactions as f64 / s.warp_instructions.max(1) as f64,
                degree
            );
        }
        out
    }
}

/// (distinct bytes, sectors touched, fewest sectors) of one warp instruction.
fn global_sectors(lanes: &[&Access]) -> (u64, u64, u64) {
    let mut bytes: Vec<u64> = lanes
        .iter()
        .flat_map(|a| a.addr..a.addr + a.bytes as u64)
        .collect();
    bytes.sort_unstable();
    bytes.dedup();
    let mut sectors: Vec<u64> = bytes.iter().map(|b| b / 32).collect();
    sectors.dedup();
    let n = bytes.len() as u64;
    (n, sectors.len() as u64, n.div_ceil(32))
}

/// (distinct bytes, wavefronts, fewest wavefronts) of one warp instruction.
fn shared_wavefronts(lanes: &[&Access]) -> (u64, u64, u64) {
    let width = lanes.iter().map(|a| a.bytes).max().unwrap_or(4).max(4);
    // Lanes served together: 128 bytes' worth per wavefront at best.
    let per_phase = (128 / width).clamp(1, 32);
    let mut wavefronts = 0u64;
    let mut ideal = 0u64;
    let mut distinct = 0u64;
    for phase in 0..32u32.div_ceil(per_phase) {
        let in_phase: Vec<&&Access> = lanes
            .iter()
            .filter(|a| a.lane / per_phase == phase)
            .collect();
        if in_phase.is_empty() {
            continue;
        }
        let mut words: Vec<u64> = in_phase
            .iter()
            .flat_map(|a| (a.addr / 4)..(a.addr + a.bytes as u64).div_ceil(4))
            .collect();
        words.sort_unstable();
        words.dedup();
        distinct += words.len() as u64 * 4;
        let mut per_bank = [0u64; 32];
        for w in &words {
            per_bank[(w % 32) as usize] += 1;
        }
        wavefronts += per_bank.iter().copied().max().unwrap_or(0);
        ideal += (words.len() as u64).div_ceil(32);
    }
    (distinct, wavefronts, ideal)
}
