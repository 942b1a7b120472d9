//! What palpa may allocate for data sized by its input (a mesh's modes, a column cache,
//! an eigen solve): half of the machine's physical memory, and no more than the
//! process's address-space limit (`ulimit -v`) leaves free. Every input-sized allocation
//! is checked against [`allowance`] before it is made, so a number typed by mistake is an
//! error naming the limit rather than an abort.
//!
//! faer's x86 matrix multiply (`private-gemm-x86`) also reserves a workspace per thread
//! that multiplies, twice its idea of the L3 cache size ([`gemm_workspace_per_thread`]):
//! 64 MiB here, 960 MiB on the machine of the review, where `ulimit -v 5G` aborted a
//! precompute whose resident size was 19 MB. [`allowance`] leaves room for it.

use std::fmt;

/// Bytes palpa may allocate for input-sized data now, and why that much.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allowance {
    /// Bytes.
    pub bytes: f64,
    /// Which limit sets it.
    pub limit: Limit,
}

/// The limit an [`Allowance`] comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// Half of this much physical memory (bytes).
    Physical(f64),
    /// The address-space limit (`ulimit -v`, bytes), less what is mapped already and the
    /// matrix multiply's per-thread workspaces.
    AddressSpace {
        /// The limit (bytes).
        limit: f64,
        /// Mapped already (bytes).
        used: f64,
        /// Kept for the workspaces (bytes).
        workspaces: f64,
    },
}

impl fmt::Display for Allowance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::Physical(memory) => write!(
                f,
                "half of this machine's {} of memory ({})",
                gb(memory),
                gb(self.bytes)
            ),
            Limit::AddressSpace {
                limit,
                used,
                workspaces,
            } => write!(
                f,
                "the {} address-space limit (ulimit -v) leaves {} ({} mapped already, {} \
                 kept for the matrix multiply's per-thread workspaces)",
                gb(limit),
                gb(self.bytes),
                gb(used),
                gb(workspaces)
            ),
        }
    }
}

/// A byte count for people: `12.3 GB`, `950 MB`.
pub fn gb(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.1} GB", bytes * 1e-9)
    } else {
        format!("{:.0} MB", bytes * 1e-6)
    }
}

/// Physical memory of this machine (bytes); 16 GB where the system does not say.
pub fn physical_memory() -> f64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        pages as f64 * page as f64
    } else {
        16e9
    }
}

/// The process's soft address-space limit (bytes), if it has one.
pub fn address_space_limit() -> Option<f64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct passed by pointer.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as f64)
}

/// Address space mapped by this process now (bytes), from `/proc/self/statm`.
fn address_space_used() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    // SAFETY: sysconf only reads system configuration.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as f64;
    pages * page
}

/// The workspace faer's x86 matrix multiply reserves in each thread that multiplies
/// (bytes): twice its L3 figure, which it derives as the L3 size per sharing CPU, times
/// the CPUs sharing an L1, times the physical cores (at least 4 × its L2 figure).
/// Read from `/sys` as it reads it; 2 × 8 MiB where `/sys` says nothing.
pub fn gemm_workspace_per_thread() -> f64 {
    let cache = |index: u32, file: &str| {
        std::fs::read_to_string(format!(
            "/sys/devices/system/cpu/cpu0/cache/index{index}/{file}"
        ))
        .ok()
        .map(|s| s.trim().to_string())
    };
    let size = |text: String| -> Option<f64> {
        let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
        let n: f64 = digits.parse().ok()?;
        Some(match unit {
            "K" => n * 1024.0,
            "M" => n * 1024.0 * 1024.0,
            "G" => n * 1024.0 * 1024.0 * 1024.0,
            _ => n,
        })
    };
    let shared = |text: String| -> f64 {
        text.split(',')
            .map(|item| match item.split_once('-') {
                Some((a, b)) => match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(a), Ok(b)) => b - a + 1.0,
                    _ => 1.0,
                },
                None => 1.0,
            })
            .sum::<f64>()
            .max(1.0)
    };
    let mut l3 = None;
    let mut l1_shared = 1.0;
    for index in 0..8 {
        let (Some(level), Some(kind)) = (cache(index, "level"), cache(index, "type")) else {
            continue;
        };
        if kind == "Instruction" {
            continue;
        }
        let sharing = cache(index, "shared_cpu_list").map_or(1.0, shared);
        match level.as_str() {
            "1" => l1_shared = sharing,
            "3" => l3 = cache(index, "size").and_then(size).map(|s| s / sharing),
            _ => {}
        }
    }
    let cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    let l3 = l3.map_or(8.0 * 1024.0 * 1024.0, |per_cpu| per_cpu * l1_shared * cores);
    2.0 * l3.max(8.0 * 1024.0 * 1024.0)
}

/// Threads that may multiply matrices: faer's pool (one per CPU), the caller, and the
/// two-thread factor solve.
fn multiplying_threads() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64) + 3.0
}

/// What palpa may allocate for input-sized data now: half of physical memory, or less
/// where an address-space limit leaves less.
pub fn allowance() -> Allowance {
    let memory = physical_memory();
    let physical = Allowance {
        bytes: memory / 2.0,
        limit: Limit::Physical(memory),
    };
    let Some(limit) = address_space_limit() else {
        return physical;
    };
    let used = address_space_used();
    let workspaces = gemm_workspace_per_thread() * multiplying_threads();
    let left = (limit - used - workspaces).max(0.0);
    if left < physical.bytes {
        Allowance {
            bytes: left,
            limit: Limit::AddressSpace {
                limit,
                used,
                workspaces,
            },
        }
    } else {
        physical
    }
}

/// `Err` naming `what`, what it needs (bytes) and the limit, when `needed` is more than
/// [`allowance`] gives.
pub fn check(needed: f64, what: impl FnOnce() -> String) -> Result<(), String> {
    let allowance = allowance();
    if needed > allowance.bytes {
        Err(format!(
            "{} needs {}, more than palpa may allocate: {allowance}",
            what(),
            gb(needed)
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_is_half_of_memory_without_an_address_space_limit() {
        if address_space_limit().is_none() {
            let a = allowance();
            assert_eq!(a.bytes, physical_memory() / 2.0);
            assert!(a.to_string().starts_with("half of this machine's"), "{a}");
        }
        let e = check(1e18, || "an eigen solve of 1e9 DOFs".into()).unwrap_err();
        assert!(
            e.starts_with("an eigen solve of 1e9 DOFs needs 1000000000.0 GB"),
            "{e}"
        );
        assert!(gemm_workspace_per_thread() >= 16.0 * 1024.0 * 1024.0);
    }
}
