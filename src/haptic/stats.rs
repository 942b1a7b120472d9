//! Tick statistics of the haptic thread: written with relaxed atomics by the haptic
//! thread only (no lock, no allocation), read from anywhere (the once-a-second logger,
//! the stream, benchmarks).

use std::sync::atomic::{AtomicU64, Ordering};

/// Histogram bin width (ns) for period and lateness.
pub const TIME_BIN_NS: u64 = 1_000;
/// Period histogram bins (1 µs each, 0–5 ms; the last bin collects everything longer).
pub const PERIOD_BINS: usize = 5_000;
/// Lateness histogram bins (1 µs each, 0–2 ms, last bin collects the rest).
pub const LATENESS_BINS: usize = 2_000;
/// Compute-time histogram bin width (ns).
pub const COMPUTE_BIN_NS: u64 = 100;
/// Compute-time histogram bins (0.1 µs each, 0–200 µs, last bin collects the rest).
pub const COMPUTE_BINS: usize = 2_000;
/// A tick whose period exceeds this missed its deadline (ns): 1.5 × the 1 ms period.
pub const MISSED_PERIOD_NS: u64 = 1_500_000;

/// Live tick statistics (shared via `Arc`).
pub struct TickStats {
    ticks: AtomicU64,
    missed: AtomicU64,
    skipped: AtomicU64,
    period: Histogram<PERIOD_BINS>,
    lateness: Histogram<LATENESS_BINS>,
    compute: Histogram<COMPUTE_BINS>,
}

struct Histogram<const N: usize> {
    bins: [AtomicU64; N],
    max_ns: AtomicU64,
    bin_ns: u64,
}

impl<const N: usize> Histogram<N> {
    fn new(bin_ns: u64) -> Self {
        Self {
            bins: std::array::from_fn(|_| AtomicU64::new(0)),
            max_ns: AtomicU64::new(0),
            bin_ns,
        }
    }

    fn record(&self, ns: u64) {
        let i = ((ns / self.bin_ns) as usize).min(N - 1);
        self.bins[i].fetch_add(1, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            bins: self
                .bins
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            bin_ns: self.bin_ns,
            max_ns: self.max_ns.load(Ordering::Relaxed),
        }
    }
}

impl Default for TickStats {
    fn default() -> Self {
        Self::new()
    }
}

impl TickStats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self {
            ticks: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            period: Histogram::new(TIME_BIN_NS),
            lateness: Histogram::new(TIME_BIN_NS),
            compute: Histogram::new(COMPUTE_BIN_NS),
        }
    }

    /// Records one tick: time since the previous wake-up, wake-up lateness past the
    /// deadline and compute time (all ns). Called by the haptic thread only.
    pub fn record(&self, period_ns: u64, lateness_ns: u64, compute_ns: u64) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
        if period_ns > MISSED_PERIOD_NS {
            self.missed.fetch_add(1, Ordering::Relaxed);
        }
        self.period.record(period_ns);
        self.lateness.record(lateness_ns);
        self.compute.record(compute_ns);
    }

    /// Records deadlines skipped because the thread fell more than a period behind.
    pub fn record_skipped(&self, n: u64) {
        self.skipped.fetch_add(n, Ordering::Relaxed);
    }

    /// A consistent-enough copy for reporting (allocates; never call on the haptic thread).
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            ticks: self.ticks.load(Ordering::Relaxed),
            missed: self.missed.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            period: self.period.snapshot(),
            lateness: self.lateness.snapshot(),
            compute: self.compute.snapshot(),
        }
    }
}

/// A copy of one histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    /// Counts per bin.
    pub bins: Vec<u64>,
    /// Bin width (ns).
    pub bin_ns: u64,
    /// Largest value seen (ns).
    pub max_ns: u64,
}

impl HistogramSnapshot {
    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.bins.iter().sum()
    }

    /// The `q`-quantile (0..1) as the upper edge of its bin (ns), at most the maximum
    /// ([`quantile_ns`]).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        quantile_ns(&self.bins, self.bin_ns, self.max_ns, q)
    }

    /// The values recorded since `earlier` (bins subtracted; max is the overall max).
    pub fn since(&self, earlier: &HistogramSnapshot) -> HistogramSnapshot {
        HistogramSnapshot {
            bins: self
                .bins
                .iter()
                .zip(&earlier.bins)
                .map(|(a, b)| a - b)
                .collect(),
            bin_ns: self.bin_ns,
            max_ns: self.max_ns,
        }
    }
}

/// The `q`-quantile (0..1) of the values binned in `bins` (each `bin_ns` wide, the last
/// collecting the rest; the largest `max_ns`) as the upper edge of its bin (ns), at most
/// `max_ns` (the last bin's edge is no bound); 0 with nothing recorded. The one quantile
/// walk of the tick statistics and the model thread's step times (`step_times`).
pub fn quantile_ns(bins: &[u64], bin_ns: u64, max_ns: u64, q: f64) -> u64 {
    let n: u64 = bins.iter().sum();
    if n == 0 {
        return 0;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, &c) in bins.iter().enumerate() {
        seen += c;
        if seen >= rank && i + 1 < bins.len() {
            return ((i as u64 + 1) * bin_ns).min(max_ns);
        }
    }
    max_ns
}

/// A copy of all tick statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsSnapshot {
    /// Ticks run.
    pub ticks: u64,
    /// Ticks whose period exceeded 1.5 ms.
    pub missed: u64,
    /// Deadlines skipped after falling more than a period behind.
    pub skipped: u64,
    /// Time between wake-ups (ns).
    pub period: HistogramSnapshot,
    /// Wake-up lateness past the deadline (ns).
    pub lateness: HistogramSnapshot,
    /// Tick compute time (ns).
    pub compute: HistogramSnapshot,
}

impl StatsSnapshot {
    /// Statistics of the ticks since `earlier`.
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            ticks: self.ticks - earlier.ticks,
            missed: self.missed - earlier.missed,
            skipped: self.skipped - earlier.skipped,
            period: self.period.since(&earlier.period),
            lateness: self.lateness.since(&earlier.lateness),
            compute: self.compute.since(&earlier.compute),
        }
    }

    /// One log line: period and compute quantiles, missed deadlines.
    pub fn summary(&self) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        format!(
            "{} ticks, period p50 {:.0} µs p99 {:.0} µs p99.9 {:.0} µs max {:.0} µs, \
             compute p50 {:.1} µs max {:.1} µs, lateness p99 {:.0} µs, missed {} skipped {}",
            self.ticks,
            us(self.period.quantile_ns(0.5)),
            us(self.period.quantile_ns(0.99)),
            us(self.period.quantile_ns(0.999)),
            us(self.period.max_ns),
            us(self.compute.quantile_ns(0.5)),
            us(self.compute.max_ns),
            us(self.lateness.quantile_ns(0.99)),
            self.missed,
            self.skipped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_from_bins() {
        let s = TickStats::new();
        for i in 0..1000u64 {
            s.record(1_000_000 + i * 100, i, 500);
        }
        s.record(2_000_000, 0, 500);
        let snap = s.snapshot();
        assert_eq!(snap.ticks, 1001);
        assert_eq!(snap.missed, 1);
        // Periods 1000.0..1099.9 µs: median near 1050 µs, bin upper edge.
        let p50 = snap.period.quantile_ns(0.5);
        assert!((1_049_000..=1_051_000).contains(&p50), "{p50}");
        assert_eq!(snap.period.max_ns, 2_000_000);
        // Every compute time 500 ns: the bin's upper edge (600 ns) is capped at the
        // largest value recorded.
        assert_eq!(snap.compute.quantile_ns(0.5), 500);
        // Every lateness below 1 µs, in the first bin: the largest, 999 ns.
        assert_eq!(snap.lateness.quantile_ns(0.99), 999);
        assert_eq!(snap.period.quantile_ns(1.0), 2_000_000);
    }
}
