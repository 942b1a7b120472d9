//! Keeping the haptic thread's memory resident: `mlock` of the address ranges it touches
//! (its stack below and above the loop's frames, the loop's state, the hand-off slots,
//! the statistics, the device's buffers), page-aligned and merged, instead of
//! `mlockall`, which locked every mapping of the process (3.4 GB with the modal model
//! and the stream server). Locked ranges are unlocked when the [`LockedMemory`] drops.

/// A byte range of this process's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte (address).
    pub start: usize,
    /// Length (bytes).
    pub len: usize,
}

impl Region {
    /// The bytes `value` occupies (its inline part; heap buffers it owns are separate).
    pub fn of<T: ?Sized>(value: &T) -> Self {
        Self {
            start: value as *const T as *const u8 as usize,
            len: std::mem::size_of_val(value),
        }
    }

    /// One past the last byte (address).
    pub fn end(&self) -> usize {
        self.start.saturating_add(self.len)
    }
}

/// What the memory is for, reported in the log line (bytes per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// The thread's stack.
    Stack,
    /// State and buffers the thread reads and writes.
    Data,
}

/// The memory a real-time thread touches, gathered before it is locked.
#[derive(Debug, Default)]
pub struct ResidentSet {
    regions: Vec<(RegionKind, Region)>,
}

impl ResidentSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds state or a buffer the thread touches.
    pub fn add(&mut self, region: Region) {
        if region.len > 0 {
            self.regions.push((RegionKind::Data, region));
        }
    }

    /// Adds the inline bytes of `value`.
    pub fn add_value<T: ?Sized>(&mut self, value: &T) {
        self.add(Region::of(value));
    }

    /// Adds the calling thread's stack from `headroom` bytes below the caller's frame
    /// up to the stack's top (every frame of the thread so far, and room for the calls
    /// the loop makes), after faulting the headroom in.
    pub fn add_current_stack(&mut self, headroom: usize) -> Result<(), String> {
        let (low, high) = current_stack()?;
        let here = prefault_stack(headroom);
        let start = here.saturating_sub(headroom).max(low);
        self.regions.push((
            RegionKind::Stack,
            Region {
                start,
                len: high - start,
            },
        ));
        Ok(())
    }

    /// Page-aligned, merged ranges of `kind`, clipped to the process's mappings (so a
    /// conservative range never reaches into unmapped memory).
    fn pages(&self, kind: RegionKind, mappings: &[(usize, usize)]) -> Vec<(usize, usize)> {
        let page = page_size();
        let mut ranges: Vec<(usize, usize)> = self
            .regions
            .iter()
            .filter(|(k, _)| *k == kind)
            .flat_map(|(_, r)| {
                let (a, b) = (r.start / page * page, r.end().div_ceil(page) * page);
                mappings
                    .iter()
                    .filter(move |&&(s, e)| s < b && a < e)
                    .map(move |&(s, e)| (a.max(s), b.min(e)))
            })
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        merged
    }

    /// Locks every range (`mlock`, which also faults the pages in). Returns what was
    /// locked and, if some of it could not be, why (the rest stays locked).
    pub fn lock(&self) -> (LockedMemory, Option<String>) {
        let mut locked = LockedMemory::default();
        let mappings = match mappings() {
            Ok(m) => m,
            Err(e) => return (locked, Some(e)),
        };
        let mut failure = None;
        // Stack first: a fault there is the likeliest (fresh pages below the frame).
        for kind in [RegionKind::Stack, RegionKind::Data] {
            for (a, b) in self.pages(kind, &mappings) {
                // SAFETY: mlock only changes residency of pages of our own mappings.
                if unsafe { libc::mlock(a as *const libc::c_void, b - a) } == 0 {
                    locked.ranges.push((a, b));
                    match kind {
                        RegionKind::Stack => locked.stack_bytes += b - a,
                        RegionKind::Data => locked.data_bytes += b - a,
                    }
                } else if failure.is_none() {
                    failure = Some(lock_failure(std::io::Error::last_os_error()));
                }
            }
        }
        (locked, failure)
    }
}

/// Why `mlock` failed, and the limit that applies.
fn lock_failure(error: std::io::Error) -> String {
    let limit = match rlimit(libc::RLIMIT_MEMLOCK) {
        libc::RLIM_INFINITY => "unlimited".to_owned(),
        n => format!("{} KiB", n / 1024),
    };
    format!("mlock: {error} (RLIMIT_MEMLOCK {limit}, no CAP_IPC_LOCK)")
}

/// Memory locked for a thread; unlocked on drop.
#[derive(Debug, Default)]
pub struct LockedMemory {
    ranges: Vec<(usize, usize)>,
    /// Bytes of stack locked.
    pub stack_bytes: usize,
    /// Bytes of state and buffers locked.
    pub data_bytes: usize,
}

impl LockedMemory {
    /// All bytes locked.
    pub fn bytes(&self) -> usize {
        self.stack_bytes + self.data_bytes
    }

    /// The locked page ranges `(start, end)` (addresses), sorted within each kind.
    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges
    }
}

impl Drop for LockedMemory {
    fn drop(&mut self) {
        for &(a, b) in &self.ranges {
            // SAFETY: unlocks pages this value locked; harmless if already unmapped.
            unsafe { libc::munlock(a as *const libc::c_void, b - a) };
        }
    }
}

/// The page size (bytes).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// The soft limit of `resource` (`RLIM_INFINITY` when unlimited).
pub fn rlimit(resource: libc::__rlimit_resource_t) -> libc::rlim_t {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to an rlimit.
    if unsafe { libc::getrlimit(resource, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        0
    }
}

/// The calling thread's stack as (lowest usable address, top) from pthread.
fn current_stack() -> Result<(usize, usize), String> {
    // SAFETY: pthread_attr_t is plain data initialised by pthread_getattr_np and
    // destroyed after use; the out-pointers are valid.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return Err("cannot read the thread's stack bounds".into());
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let mut guard: libc::size_t = 0;
        let r = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_getguardsize(&attr, &mut guard);
        libc::pthread_attr_destroy(&mut attr);
        if r != 0 {
            return Err("cannot read the thread's stack bounds".into());
        }
        let low = addr as usize;
        Ok((low + guard, low + size))
    }
}

/// Stack written per recursion step while faulting the headroom in (bytes).
const PREFAULT_CHUNK: usize = 16 * 1024;

/// Writes `headroom` bytes of stack below the caller's frame (so those pages exist
/// before the loop needs them) and returns the address of the caller's frame.
#[inline(never)]
fn prefault_stack(headroom: usize) -> usize {
    let here = 0u8;
    let here = std::hint::black_box(&here) as *const u8 as usize;
    touch(headroom.div_ceil(PREFAULT_CHUNK));
    here
}

/// Recurses `chunks` times with a written 16 KiB frame each: the compiler's own stack
/// probes and writes fault the pages in, without writing below the stack pointer.
#[inline(never)]
fn touch(chunks: usize) {
    if chunks == 0 {
        return;
    }
    let mut frame = [0u8; PREFAULT_CHUNK];
    std::hint::black_box(&mut frame);
    touch(chunks - 1);
    std::hint::black_box(&frame);
}

/// This process's mappings `(start, end)` from `/proc/self/maps`.
fn mappings() -> Result<Vec<(usize, usize)>, String> {
    let text = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| format!("cannot read /proc/self/maps: {e}"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let range = line.split_whitespace().next()?;
            let (a, b) = range.split_once('-')?;
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// VmLck of this process (bytes), as the kernel counts it.
    fn vm_locked() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmLck:")).unwrap();
        let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }

    #[test]
    fn regions_are_page_aligned_merged_and_clipped_to_mappings() {
        let page = page_size();
        let mut set = ResidentSet::new();
        // Two overlapping ranges and one two pages further, in a made-up mapping.
        let base = 1000 * page;
        set.add(Region {
            start: base + 10,
            len: page,
        });
        set.add(Region {
            start: base + page + 5,
            len: 10,
        });
        set.add(Region {
            start: base + 4 * page + 1,
            len: 1,
        });
        // A range reaching past the mapping's end is clipped to it (and merges with
        // the adjacent page before it).
        set.add(Region {
            start: base + 6 * page - 1,
            len: 3 * page,
        });
        let mappings = [(base, base + 7 * page)];
        assert_eq!(
            set.pages(RegionKind::Data, &mappings),
            vec![(base, base + 2 * page), (base + 4 * page, base + 7 * page)]
        );
        assert!(set.pages(RegionKind::Stack, &mappings).is_empty());
    }

    #[test]
    fn locking_a_buffer_and_the_stack_shows_in_vm_lck_and_is_undone_on_drop() {
        // Run on a thread of its own: the stack lock covers that thread's frames.
        std::thread::spawn(|| {
            if rlimit(libc::RLIMIT_MEMLOCK) < (1 << 20) {
                // Without CAP_IPC_LOCK the default limit may be too small: nothing to test.
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } != 0 {
                    return;
                }
            }
            let buffer = vec![7u8; 3 * page_size()];
            let before = vm_locked();
            let mut set = ResidentSet::new();
            set.add_value(buffer.as_slice());
            set.add_current_stack(64 * 1024).unwrap();
            let (locked, failure) = set.lock();
            assert_eq!(failure, None);
            assert!(locked.data_bytes >= buffer.len());
            assert!(locked.data_bytes <= buffer.len() + 2 * page_size());
            assert!(locked.stack_bytes >= 64 * 1024);
            assert_eq!(locked.bytes() % page_size(), 0);
            // Other tests may lock concurrently; ours are counted at least.
            assert!(vm_locked() >= before + locked.bytes());
            let expected_after = vm_locked() - locked.bytes();
            drop(locked);
            assert!(vm_locked() <= expected_after);
        })
        .join()
        .unwrap();
    }
}
