//! Peak memory of one operation, measured in a fresh child process (for benches).
//!
//! Without a custom allocator (agentmem forbids `unsafe`), the peak is read from Linux's
//! `/proc/self/status`: writing `5` to `/proc/self/clear_refs` resets `VmHWM`, the peak resident
//! set, so `VmHWM` after the operation minus `VmRSS` before it is what the operation added at
//! its peak. Each case runs in its own process, so none reuses another's freed heap.
//!
//! A bench's `main` calls [`child_main`] first (which runs one case and exits when this process
//! is such a child), and [`measure_in_children`] where it wants the figures printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Set in a child process: which case to measure.
pub const CASE_ENV: &str = "AGENTMEM_BENCH_MEMORY_CASE";
/// Set in a child process: the folder holding the data the case loads.
pub const DIR_ENV: &str = "AGENTMEM_BENCH_MEMORY_DIR";

/// What one measured case reports: resident set before, peak during (KiB), messages loaded.
pub type Measured = Result<(u64, u64, usize), String>;

/// A field of `/proc/self/status` (`VmRSS`, `VmHWM`), in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        line.strip_prefix(field)?
            .strip_prefix(':')?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

/// Runs `load` between a reset of the peak resident set and a read of it. `load` returns how
/// many messages it loaded. `Err` when the peak cannot be reset (not Linux, or
/// `/proc/self/clear_refs` not writable).
pub fn peak_of(load: impl FnOnce() -> usize) -> Measured {
    std::fs::write("/proc/self/clear_refs", "5").map_err(|e| {
        format!("cannot reset the peak RSS (write 5 to /proc/self/clear_refs): {e}")
    })?;
    let before = status_kib("VmRSS").ok_or("no VmRSS in /proc/self/status")?;
    let messages = load();
    let peak = status_kib("VmHWM").ok_or("no VmHWM in /proc/self/status")?;
    Ok((before, peak, messages))
}

/// When this process is a measuring child, runs `case(name, dir)` (which should call
/// [`peak_of`] around its load), prints the result for the parent and returns `true`: the
/// bench's `main` then returns. Otherwise returns `false` at once.
pub fn child_main(case: impl FnOnce(&str, &Path) -> Measured) -> bool {
    let Ok(name) = std::env::var(CASE_ENV) else {
        return false;
    };
    let dir = std::env::var_os(DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_default();
    match case(&name, &dir) {
        Ok((before, peak, messages)) => {
            println!("peak before_kib={before} peak_kib={peak} messages={messages}")
        }
        Err(why) => println!("skip {why}"),
    }
    true
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Runs each `(case, description)` in a fresh child process of this executable on the data in
/// `dir`, and prints each one's peak on stderr. Panics when a child loads a number of messages
/// other than `messages`.
pub fn measure_in_children(dir: &Path, cases: &[(&str, &str)], messages: usize) {
    for (case, what) in cases {
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                eprintln!("  {what}: cannot find this executable: {e}");
                continue;
            }
        };
        let out = match Command::new(exe)
            .env(CASE_ENV, case)
            .env(DIR_ENV, dir)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
        {
            Ok(out) => out,
            Err(e) => {
                eprintln!("  {what}: cannot start the child: {e}");
                continue;
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.starts_with("peak ") || l.starts_with("skip "));
        let field = |line: &str, name: &str| -> Option<u64> {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        };
        match line {
            Some(l) if l.starts_with("peak ") => {
                let (Some(before), Some(peak), Some(loaded)) = (
                    field(l, "before_kib"),
                    field(l, "peak_kib"),
                    field(l, "messages"),
                ) else {
                    eprintln!("  {what}: unreadable child output {l:?}");
                    continue;
                };
                assert_eq!(loaded as usize, messages, "{what} loaded the wrong number");
                eprintln!(
                    "  {what}: peak - before = {:.1} MiB (RSS before {:.1} MiB, peak {:.1} MiB)",
                    mib(peak.saturating_sub(before)),
                    mib(before),
                    mib(peak)
                );
            }
            Some(l) => eprintln!("  {what}: skipped: {}", &l[5..]),
            None => eprintln!("  {what}: the child failed ({}): {stdout}", out.status),
        }
    }
}
