//! The model thread's own timing: how long each step took, how late it woke, and the
//! time between the local force models it published — what the haptic thread's
//! watchdog judges. Kept by the model thread alone and logged when it stops.

/// Histogram bin width (ns).
const BIN_NS: u64 = 100_000;
/// Bins: 0.1 ms each, 0–50 ms; the last collects everything longer.
const BINS: usize = 500;

/// Times of one kind (ns), binned.
#[derive(Clone, Debug)]
struct Times {
    bins: Box<[u64; BINS]>,
    count: u64,
    max_ns: u64,
}

impl Times {
    fn new() -> Self {
        Self {
            bins: Box::new([0; BINS]),
            count: 0,
            max_ns: 0,
        }
    }

    fn record(&mut self, ns: u64) {
        self.bins[((ns / BIN_NS) as usize).min(BINS - 1)] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Upper edge of the bin holding quantile `q` (ns), capped at the largest time.
    fn quantile_ns(&self, q: f64) -> u64 {
        super::stats::quantile_ns(&self.bins[..], BIN_NS, self.max_ns, q)
    }

    /// How many exceeded `ns`, to the bin.
    fn over(&self, ns: u64) -> u64 {
        let first = ((ns / BIN_NS) as usize + 1).min(BINS);
        self.bins[first..].iter().sum()
    }
}

/// Step durations, wake-up lateness and intervals between published models.
#[derive(Clone, Debug)]
pub struct StepTimes {
    step: Times,
    lateness: Times,
    published: Times,
    last_publish: Option<u64>,
}

impl Default for StepTimes {
    fn default() -> Self {
        Self::new()
    }
}

impl StepTimes {
    /// Nothing recorded yet.
    pub fn new() -> Self {
        Self {
            step: Times::new(),
            lateness: Times::new(),
            published: Times::new(),
            last_publish: None,
        }
    }

    /// One step that woke `lateness_ns` after its deadline and took `step_ns`; it
    /// published a model at `published_at` (ns, any clock) if it had a new one.
    pub fn record(&mut self, lateness_ns: u64, step_ns: u64, published_at: Option<u64>) {
        self.lateness.record(lateness_ns);
        self.step.record(step_ns);
        if let Some(at) = published_at {
            if let Some(last) = self.last_publish.replace(at) {
                self.published.record(at.saturating_sub(last));
            }
        }
    }

    /// One log line; `late_ns` is the model age the watchdog calls late (ns).
    pub fn summary(&self, late_ns: u64) -> String {
        let ms = |ns: u64| ns as f64 / 1e6;
        format!(
            "{} steps, step p50 {:.1} ms p99 {:.1} ms max {:.1} ms, wake-up lateness p99 \
             {:.1} ms max {:.1} ms; between published models p50 {:.1} ms p99 {:.1} ms max \
             {:.1} ms, {} over {:.0} ms",
            self.step.count,
            ms(self.step.quantile_ns(0.5)),
            ms(self.step.quantile_ns(0.99)),
            ms(self.step.max_ns),
            ms(self.lateness.quantile_ns(0.99)),
            ms(self.lateness.max_ns),
            ms(self.published.quantile_ns(0.5)),
            ms(self.published.quantile_ns(0.99)),
            ms(self.published.max_ns),
            self.published.over(late_ns),
            ms(late_ns)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_between_published_models_are_counted_past_the_late_age() {
        let mut s = StepTimes::new();
        let ms = 1_000_000;
        for (k, at) in [0, 5, 10, 25, 30].iter().enumerate() {
            s.record(k as u64 * 100_000, 2 * ms, Some(at * ms));
        }
        s.record(0, 40 * ms, None);
        assert_eq!(s.published.count, 4);
        assert_eq!(s.published.max_ns, 15 * ms);
        assert_eq!(s.published.over(8 * ms), 1);
        assert_eq!(s.step.max_ns, 40 * ms);
        // The median is reported as the upper edge of its 0.1 ms bin.
        assert_eq!(s.step.quantile_ns(0.5), 2 * ms + BIN_NS);
        assert!(
            s.summary(8 * ms).contains("1 over 8 ms"),
            "{}",
            s.summary(8 * ms)
        );
    }
}
