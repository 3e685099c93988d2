//! The validation sweep in child processes, so that a device fault costs one case, not the
//! run (`rustile validate --isolate`).
//!
//! A sticky device error (a trap, an illegal address) poisons every CUDA context of the
//! process that made it; on the H200's driver (580) nothing in that process can use the GPU
//! again (`notes/reliability.md`). So the parent here never touches CUDA: it starts a child
//! ([`run`]'s `spawn`, normally `rustile validate … --isolate-child FROM`), which plans the
//! same cases, runs them from index `FROM` and reports each on its stdout as one JSON line
//! after [`PREFIX`] ([`Message`]). When a case faults the device the child reports it and
//! exits; when a child dies (or, with [`Options::case_timeout`], hangs) in the middle of a
//! case, the parent records that case as a fault, naming how the child ended. Either way the
//! parent starts a new child at the next case, until every case has an outcome.
//!
//! Fault injection, for tests: with `RUSTILE_INJECT_FAULT=<label>` ([`INJECT_ENV`]; or
//! `#<index>`, the case's index in the plan) the child runs [`crate::fault::provoke`] (a
//! trap) on the GPU instead of the case of that exact label; in the simulator, which has no device faults, it aborts the child process
//! at that case instead (the parent sees a child die mid-case).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use rustile_kernels::registry::DType;
use serde::{Deserialize, Serialize};

use super::{plan, run_planned, CaseOutcome, Planned, Scale, Selection};
use crate::backend::Backend;
use crate::error::{Error, Result};

/// What starts every protocol line on a child's stdout; other lines are passed on to the
/// parent's stderr.
pub const PREFIX: &str = "@rustile-isolate ";

/// The environment variable naming the case label a child faults instead of running.
pub const INJECT_ENV: &str = "RUSTILE_INJECT_FAULT";

/// One protocol line from a child, after [`PREFIX`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Message {
    /// First: how many cases the sweep has (every child must plan the same) and the back
    /// end's name.
    Plan {
        /// Cases in the whole sweep.
        total: usize,
        /// [`Backend::name`].
        backend: String,
    },
    /// Case `index` begins.
    Start {
        /// Its index in the plan.
        index: usize,
        /// `family/variant`.
        kernel: String,
        /// dtype name.
        dtype: String,
        /// Shape.
        shape: String,
        /// The seed of its inputs.
        seed: u64,
    },
    /// Case `index` ended.
    Done {
        /// Its index in the plan.
        index: usize,
        /// `None` if it passed, else why not.
        error: Option<String>,
        /// Whether the error was a device fault (the child exits after it).
        fault: bool,
        /// Where its tensors were dumped, if they were.
        dump: Option<String>,
    },
}

impl Message {
    /// The protocol line: [`PREFIX`] and the JSON, no newline.
    pub fn line(&self) -> String {
        // Serialising a plain enum of strings and integers cannot fail.
        format!(
            "{PREFIX}{}",
            serde_json::to_string(self).expect("a serialisable message")
        )
    }
}

/// The child's side: plans `families`' cases at `scale` on `backend` as [`super::validate_with`]
/// does (the same selection, the same seeds), reports the plan, then runs the cases from
/// index `from`, each as a [`Message::Start`] and a [`Message::Done`] on `out`. Returns after
/// the last case or right after a case that faulted the device (the context is lost: the
/// parent starts a new child for the rest). Errors: writing to `out`.
pub fn child(
    backend: &Backend,
    families: &[&'static dyn super::super::Family],
    scale: Scale,
    seed: u64,
    selection: &Selection,
    from: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let planned = plan(backend, families, scale, seed, |label| {
        selection.case.as_deref().is_none_or(|f| label.contains(f))
    });
    let inject = std::env::var(INJECT_ENV).ok();
    let send = |out: &mut dyn Write, m: Message| {
        writeln!(out, "{}", m.line())
            .and_then(|()| out.flush())
            .map_err(|source| Error::Io {
                path: "the isolated child's stdout".into(),
                source,
            })
    };
    send(
        out,
        Message::Plan {
            total: planned.len(),
            backend: backend.name(),
        },
    )?;
    for (index, p) in planned.iter().enumerate().skip(from) {
        send(
            out,
            Message::Start {
                index,
                kernel: p.case.kernel.clone(),
                dtype: p.case.dtype.name().into(),
                shape: p.case.shape.clone(),
                seed: p.seed,
            },
        )?;
        let outcome = if inject
            .as_deref()
            .is_some_and(|v| injects(v, index, &p.label))
        {
            injected(backend, p)
        } else {
            run_planned(backend, p, selection)
        };
        send(
            out,
            Message::Done {
                index,
                error: outcome.error.clone(),
                fault: outcome.fault,
                dump: outcome.dump.clone(),
            },
        )?;
        if outcome.fault {
            break;
        }
    }
    Ok(())
}

/// Whether [`INJECT_ENV`]'s value `v` names case `index` labelled `label`: its exact label,
/// or `#INDEX`.
fn injects(v: &str, index: usize, label: &str) -> bool {
    v == label || v.strip_prefix('#').and_then(|i| i.parse().ok()) == Some(index)
}

/// The injected fault in place of case `p`: a trap on the GPU; in the simulator the process
/// aborts (what a fault that kills the process looks like to the parent).
fn injected(backend: &Backend, p: &Planned) -> CaseOutcome {
    let error = match backend {
        Backend::Gpu(gpu) => match crate::fault::provoke(gpu, crate::fault::Fault::Trap) {
            Err(e) => e,
            Ok(()) => Error::Usage(format!("the trap injected into {} did not fault", p.label)),
        },
        Backend::Simulator(_) => {
            eprintln!("{INJECT_ENV}: aborting the child at {}", p.label);
            std::process::abort()
        }
    };
    CaseOutcome {
        kernel: p.case.kernel.clone(),
        dtype: p.case.dtype.name(),
        shape: p.case.shape.clone(),
        seed: p.seed,
        fault: error.is_device_fault(),
        error: Some(format!("{INJECT_ENV}: {error}")),
        dump: None,
    }
}

/// How [`run`] watches its children.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// A child that sends nothing for this long is killed; the case it was running is
    /// reported as a fault (a hang). `None`: wait for ever.
    pub case_timeout: Option<Duration>,
}

/// What an isolated sweep gave.
#[derive(Debug)]
pub struct Report {
    /// The back end the children ran on ([`Backend::name`]).
    pub backend: String,
    /// Every case's outcome, in plan order (all of them unless `unfinished`).
    pub outcomes: Vec<CaseOutcome>,
    /// How many children ran.
    pub children: usize,
    /// Why the sweep stopped before its last case, if it did: a child that ended without
    /// starting the next case, or broke the protocol. The cases after `outcomes` did not run.
    pub unfinished: Option<String>,
    /// Cases in the plan.
    pub total: usize,
}

/// The case a child is running.
struct Running {
    index: usize,
    kernel: String,
    dtype: &'static str,
    shape: String,
    seed: u64,
    label: String,
}

enum Event {
    Line(String),
    Eof,
}

/// The parent's side: `spawn(from)` builds the command of a child that runs the cases from
/// index `from` (see [`child`]; stdin, stdout and stderr are set here). Starts children until
/// every case has an outcome: a child that dies, is killed after [`Options::case_timeout`],
/// or reports a device fault costs the case it was running, recorded as a fault naming how
/// it ended, and a new child goes on from the next case. `progress` is told each case as it
/// starts. Errors: a child that cannot be started, or one that ends before planning (no
/// GPU, a bad argument: its stderr is in the message).
pub fn run(
    mut spawn: impl FnMut(usize) -> Command,
    options: &Options,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<Report> {
    let mut report = Report {
        backend: String::new(),
        outcomes: Vec::new(),
        children: 0,
        unfinished: None,
        total: 0,
    };
    let mut planned: Option<usize> = None;
    loop {
        let next = report.outcomes.len();
        let mut cmd = spawn(next);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd.spawn().map_err(|source| Error::Io {
            path: format!("starting the isolated child `{program}`"),
            source,
        })?;
        report.children += 1;
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let tx_out = tx.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx_out.send(Event::Line(line)).is_err() {
                    break;
                }
            }
            let _ = tx_out.send(Event::Eof);
        });
        drop(tx);
        let stderr = child.stderr.take().expect("piped stderr");
        let (tail_tx, tail_rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Passed on as it comes; the last lines kept for the report.
            let mut tail = std::collections::VecDeque::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("{line}");
                if tail.len() == 8 {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
            let _ = tail_tx.send(Vec::from(tail).join(" | "));
        });
        let mut running: Option<Running> = None;
        let mut started = false;
        let mut ended: Option<String> = None; // a hang or a protocol error: the child is killed
        loop {
            let event = match options.case_timeout {
                Some(t) => match rx.recv_timeout(t) {
                    Ok(e) => e,
                    Err(RecvTimeoutError::Timeout) => {
                        ended = Some(format!("no result after {} s: killed", t.as_secs_f64()));
                        break;
                    }
                    Err(RecvTimeoutError::Disconnected) => Event::Eof,
                },
                None => rx.recv().unwrap_or(Event::Eof),
            };
            let line = match event {
                Event::Eof => break,
                Event::Line(l) => l,
            };
            let Some(json) = line.strip_prefix(PREFIX) else {
                eprintln!("{line}");
                continue;
            };
            let step = serde_json::from_str::<Message>(json)
                .map_err(|e| format!("an unreadable protocol line `{json}`: {e}"))
                .and_then(|m| receive(m, &mut report, &mut planned, &mut running, &mut progress));
            match step {
                Ok(true) => started = true,
                Ok(false) => {}
                Err(why) => {
                    ended = Some(format!("broke the protocol ({why}): killed"));
                    break;
                }
            }
        }
        if ended.is_some() {
            // Ours, by its handle; it may have exited meanwhile (then kill is a no-op error).
            let _ = child.kill();
        }
        let status = child.wait().map_err(|source| Error::Io {
            path: format!("waiting for the isolated child `{program}`"),
            source,
        })?;
        // The readers end at EOF, when the child is gone; a grandchild that kept its pipes
        // open would hold them, so the stderr tail is waited for a few seconds at most and
        // the stdout reader is left to finish on its own.
        drop(reader);
        let tail = tail_rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        let how = ended.unwrap_or_else(|| exit_text(status));
        if let Some(r) = running.take() {
            report.outcomes.push(CaseOutcome {
                kernel: r.kernel,
                dtype: r.dtype,
                shape: r.shape,
                seed: r.seed,
                error: Some(format!(
                    "device fault: the isolated child {how} while running {}{}",
                    r.label,
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its stderr: {tail}")
                    }
                )),
                fault: true,
                dump: None,
            });
            debug_assert_eq!(r.index + 1, report.outcomes.len());
            continue;
        }
        let Some(total) = planned else {
            return Err(Error::Usage(format!(
                "the isolated child `{program}` {how} before planning its cases: {tail}"
            )));
        };
        if report.outcomes.len() >= total {
            return Ok(report);
        }
        if !started || how.contains("protocol") {
            report.unfinished = Some(format!(
                "a child {how} without running case {} of {total}: {} cases not run{}",
                report.outcomes.len(),
                total - report.outcomes.len(),
                if tail.is_empty() {
                    String::new()
                } else {
                    format!("; its stderr: {tail}")
                }
            ));
            return Ok(report);
        }
    }
}

/// Applies one message; `Ok(true)` when it starts a case. `Err`: a protocol violation.
fn receive(
    m: Message,
    report: &mut Report,
    planned: &mut Option<usize>,
    running: &mut Option<Running>,
    progress: &mut impl FnMut(usize, usize, &str),
) -> std::result::Result<bool, String> {
    let next = report.outcomes.len();
    match m {
        Message::Plan { total, backend } => {
            if planned.is_some_and(|p| p != total) {
                return Err(format!(
                    "it planned {total} cases, an earlier child {}",
                    planned.unwrap_or_default()
                ));
            }
            *planned = Some(total);
            report.total = total;
            report.backend = backend;
            Ok(false)
        }
        Message::Start {
            index,
            kernel,
            dtype,
            shape,
            seed,
        } => {
            let total = planned.ok_or("a case before the plan")?;
            if running.is_some() || index != next || index >= total {
                return Err(format!("case {index} started, case {next} expected"));
            }
            let dtype = [DType::F32, DType::F16, DType::Bf16]
                .into_iter()
                .map(DType::name)
                .find(|&d| d == dtype)
                .ok_or_else(|| format!("an unknown dtype `{dtype}`"))?;
            let label = format!("{kernel} {dtype} {shape}");
            progress(index, total, &label);
            *running = Some(Running {
                index,
                kernel,
                dtype,
                shape,
                seed,
                label,
            });
            Ok(true)
        }
        Message::Done {
            index,
            error,
            fault,
            dump,
        } => {
            let r = running
                .take()
                .filter(|r| r.index == index)
                .ok_or_else(|| format!("case {index} ended, but it was not running"))?;
            report.outcomes.push(CaseOutcome {
                kernel: r.kernel,
                dtype: r.dtype,
                shape: r.shape,
                seed: r.seed,
                error,
                fault,
                dump,
            });
            Ok(false)
        }
    }
}

/// How a child ended, in words.
fn exit_text(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("was killed by signal {sig}");
        }
    }
    match status.code() {
        Some(0) => "exited".into(),
        Some(c) => format!("exited with code {c}"),
        None => "ended".into(),
    }
}

/// The arguments of `rustile validate` for a child of an isolated sweep.
#[derive(Clone, Debug, Default)]
pub struct ChildArgs {
    /// Only this family.
    pub family: Option<String>,
    /// In the simulator.
    pub sim: bool,
    /// [`Scale::Quick`] instead of [`Scale::Full`].
    pub quick: bool,
    /// [`Selection::case`].
    pub case: Option<String>,
    /// [`Selection::dump`].
    pub dump: Option<std::path::PathBuf>,
    /// [`Selection::failures`].
    pub failures: Option<std::path::PathBuf>,
    /// The run's seed (every child must use the same).
    pub seed: u64,
}

impl ChildArgs {
    /// `exe validate … --seed SEED --isolate-child FROM`: a child that runs the cases from
    /// `from`.
    pub fn command(&self, exe: &std::path::Path, from: usize) -> Command {
        let mut c = Command::new(exe);
        c.arg("validate");
        if let Some(f) = &self.family {
            c.arg(f);
        }
        if self.sim {
            c.arg("--sim");
        }
        if self.quick {
            c.arg("--quick");
        }
        if let Some(t) = &self.case {
            c.arg("--case").arg(t);
        }
        if let Some(d) = &self.dump {
            c.arg("--dump").arg(d);
        }
        if let Some(d) = &self.failures {
            c.arg("--failures").arg(d);
        }
        c.arg("--seed")
            .arg(self.seed.to_string())
            .arg("--isolate-child")
            .arg(from.to_string());
        c
    }
}
