//! What the runtime nonlinear model gave up to keep the force on the hand: counted per
//! kind, each logged when it happens (the first time, then once a second of steps), so
//! the log and the stop summary say why the force was extrapolated.

/// Steps at the model rate between two log lines of one kind.
const LOG_EVERY: u64 = 200;

/// The tracing target of a step's trace (debug: one line a step; trace: Newton's
/// iterations), for studying failed steps (`examples/brisk_trace.rs`).
pub(in crate::nonlinear) const TRACE: &str = "palpa::nonlinear::trace";

/// Why a step did not end on a converged state of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Degradation {
    /// The step would have overrun its period: it ended with the state and forces of
    /// its last linearised solve (a frozen tangent).
    FrozenTangent,
    /// A large jump of the probe was solved through intermediate targets.
    SubStepped,
    /// No solve converged: the step kept the last good state and gave the forces its
    /// tangent predicts for the new targets (the local stiffness, extrapolated); held
    /// again, that state is first scaled back toward the rest shape.
    HeldLastState,
    /// The last state had left a law's range (an element inverted under a law that
    /// became active since): the step started from that state's static part scaled
    /// back until every energy was finite.
    Restarted,
    /// A frozen-tangent or held step's linearisation pushed harder than the last good
    /// state and its stiffness allow: its force was scaled down to that.
    ForceLimited,
}

/// Counts of [`Degradation`]s over the model's life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepHealth {
    /// Steps ended on a frozen tangent.
    pub frozen_tangent: u64,
    /// Steps solved through intermediate targets.
    pub sub_stepped: u64,
    /// Steps held on the last good state.
    pub held: u64,
    /// Steps restarted from a state scaled back into the laws' range.
    pub restarted: u64,
    /// Degraded steps whose force was limited to the last good state's allowance.
    pub force_limited: u64,
    /// Steps held in a row now.
    pub held_in_a_row: u64,
    /// The last failure a held step recovered from, in words.
    pub last_failure: Option<String>,
}

/// The last step that ended on a converged state of its own: what a degraded step's
/// force is limited by ([`crate::nonlinear::ReducedStatics::degraded_allowance`]).
#[derive(Clone, Debug, Default)]
pub(super) struct LastGood {
    /// Its reduced coordinates (in the basis of `restarts`; shapes joined since are
    /// zero in it).
    pub q: Vec<f64>,
    /// How hard its rows pushed in all (N, Σ|λ|).
    pub force: f64,
    /// The basis's restarts then (a recycled basis has other coordinates).
    pub restarts: u64,
}

impl StepHealth {
    /// Counts one `kind`, logging it (`why`: the failure it recovered from).
    pub(super) fn count(&mut self, kind: Degradation, why: Option<&str>) {
        let counter = match kind {
            Degradation::FrozenTangent => &mut self.frozen_tangent,
            Degradation::SubStepped => &mut self.sub_stepped,
            Degradation::HeldLastState => &mut self.held,
            Degradation::Restarted => &mut self.restarted,
            Degradation::ForceLimited => &mut self.force_limited,
        };
        *counter += 1;
        let n = *counter;
        if kind == Degradation::HeldLastState {
            self.held_in_a_row += 1;
            self.last_failure = why.map(str::to_owned);
        }
        if n % LOG_EVERY == 1 {
            let what = match kind {
                Degradation::FrozenTangent => {
                    "a large-strain step would have overrun its period and ended on its last \
                     linearised solve (frozen tangent)"
                }
                Degradation::SubStepped => {
                    "a large-strain step solved a large jump of the probe through intermediate \
                     targets"
                }
                Degradation::HeldLastState => {
                    "a large-strain step did not converge; the force follows the last good \
                     state's stiffness until a step does"
                }
                Degradation::Restarted => {
                    "a large-strain state left its laws' range; the step restarted from it \
                     scaled back"
                }
                Degradation::ForceLimited => {
                    "a degraded large-strain step pushed harder than the last good state's \
                     stiffness allows; its force was limited to that"
                }
            };
            match why {
                Some(why) => tracing::warn!("{what} ({why}; {n} such steps so far)"),
                None => tracing::warn!("{what} ({n} such steps so far)"),
            }
        }
    }

    /// The stop summary's line: each kind's count with its reason, or `None` if every
    /// step ended on a converged state of its own.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.frozen_tangent > 0 {
            parts.push(format!(
                "{} ended on a frozen tangent (the step would have overrun its period)",
                self.frozen_tangent
            ));
        }
        if self.sub_stepped > 0 {
            parts.push(format!(
                "{} solved a large probe jump through intermediate targets",
                self.sub_stepped
            ));
        }
        if self.restarted > 0 {
            parts.push(format!(
                "{} restarted from a state scaled back into the laws' range (an element \
                 inverted under a newly active law)",
                self.restarted
            ));
        }
        if self.force_limited > 0 {
            parts.push(format!(
                "{} had their force limited to what the last good state's stiffness allows \
                 (their linearisation pushed harder)",
                self.force_limited
            ));
        }
        if self.held > 0 {
            let why = self
                .last_failure
                .as_deref()
                .map_or(String::new(), |w| format!("; the last: {w}"));
            parts.push(format!(
                "{} held the last good state with its stiffness (no solve converged{why})",
                self.held
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "the large-strain model degraded steps to keep the force: {}",
                parts.join(", ")
            )
        })
    }

    /// A step converged on its own (after held ones: the tissue recovered).
    pub(super) fn recovered(&mut self) {
        if self.held_in_a_row > 0 {
            tracing::info!(
                "the large-strain model converges again after {} held steps",
                self.held_in_a_row
            );
            self.held_in_a_row = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary names each kind that happened with its count and reason, and
    /// nothing when every step converged.
    #[test]
    fn the_summary_counts_each_degradation_with_its_reason() {
        let mut health = StepHealth::default();
        assert_eq!(health.summary(), None);
        health.count(Degradation::FrozenTangent, None);
        health.count(Degradation::FrozenTangent, None);
        health.count(
            Degradation::HeldLastState,
            Some("tetrahedron 7 is inverted"),
        );
        let line = health.summary().expect("degraded");
        assert!(line.contains("2 ended on a frozen tangent"), "{line}");
        assert!(!line.contains("intermediate targets"), "{line}");
        assert!(
            line.contains("1 held the last good state") && line.contains("tetrahedron 7"),
            "{line}"
        );
    }
}
