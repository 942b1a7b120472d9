//! An allocation that fails aborts a Rust program with only "memory allocation of N
//! bytes failed" and SIGABRT. The `palpa` binary's allocator ([`ReportingAllocator`])
//! remembers the size of the last allocation the system refused, and a SIGABRT handler
//! ([`report_on_abort`]) that finds one prints what failed and which limit holds (the
//! address-space limit, `ulimit -v`, or the machine's memory) and exits with status 1.
//! Allocations that are allowed to fail (`try_reserve`) and are handled never reach the
//! handler: only an abort does.
//!
//! Hand-written: the handler may only write and `_exit` (async-signal-safe), so the
//! message is formatted into a buffer on the stack; the limits are read when it is
//! installed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Size (bytes) of the last allocation the system refused; 0 when none was.
static REFUSED: AtomicUsize = AtomicUsize::new(0);
/// The address-space limit when the handler was installed (bytes; 0: none).
static ADDRESS_LIMIT: AtomicU64 = AtomicU64::new(0);
/// Physical memory when the handler was installed (bytes).
static PHYSICAL: AtomicU64 = AtomicU64::new(0);

/// The system allocator, remembering the size of an allocation it refuses.
pub struct ReportingAllocator;

fn remember(pointer: *mut u8, size: usize) -> *mut u8 {
    if pointer.is_null() {
        REFUSED.store(size.max(1), Ordering::Relaxed);
    }
    pointer
}

// SAFETY: every call is forwarded to `System` unchanged; only a refused size is noted.
unsafe impl GlobalAlloc for ReportingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        remember(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        remember(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        remember(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// A message built on the stack (no allocation in a signal handler).
struct StackText {
    bytes: [u8; 512],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let take = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// Bytes for people, in binary units (a limit set with `ulimit -v` is in KiB).
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

extern "C" fn on_abort(_: libc::c_int) {
    let refused = REFUSED.load(Ordering::Relaxed) as u64;
    if refused == 0 {
        // Not an allocation: abort as usual (abort raises SIGABRT again with the
        // default action once this handler returns).
        // SAFETY: resetting a signal's disposition is async-signal-safe.
        unsafe { libc::signal(libc::SIGABRT, libc::SIG_DFL) };
        return;
    }
    let mut text = StackText {
        bytes: [0; 512],
        len: 0,
    };
    let limit = ADDRESS_LIMIT.load(Ordering::Relaxed);
    let physical = PHYSICAL.load(Ordering::Relaxed);
    let _ = std::fmt::Write::write_fmt(
        &mut text,
        format_args!(
            "error: out of memory: an allocation of {:.1} MiB failed; ",
            mib(refused)
        ),
    );
    let _ = if limit > 0 {
        std::fmt::Write::write_fmt(
            &mut text,
            format_args!(
                "the address-space limit (ulimit -v) is {:.0} MiB of this machine's {:.0} MiB: \
                 raise it, or ask for less (fewer modes, a coarser mesh)\n",
                mib(limit),
                mib(physical)
            ),
        )
    } else {
        std::fmt::Write::write_fmt(
            &mut text,
            format_args!(
                "this machine has {:.0} MiB: ask for less (fewer modes, a coarser mesh)\n",
                mib(physical)
            ),
        )
    };
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer outlives the call.
    unsafe {
        libc::write(2, text.bytes.as_ptr().cast(), text.len);
        libc::_exit(1);
    }
}

/// Installs the SIGABRT handler that turns an abort after a refused allocation into an
/// error message and exit status 1 (for a binary whose global allocator is
/// [`ReportingAllocator`]).
pub fn report_on_abort() {
    if let Some(limit) = crate::budget::address_space_limit() {
        ADDRESS_LIMIT.store(limit as u64, Ordering::Relaxed);
    }
    PHYSICAL.store(crate::budget::physical_memory() as u64, Ordering::Relaxed);
    let handler = on_abort as extern "C" fn(libc::c_int);
    // SAFETY: the handler only reads atomics, writes to stderr and exits.
    unsafe { libc::signal(libc::SIGABRT, handler as libc::sighandler_t) };
}
