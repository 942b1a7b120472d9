//! What the runtime nonlinear model gave up to keep the force on the hand: counted per
//! kind, each logged when it happens (the first time, then once a second of steps), so
//! the log and the stop summary say why the force was extrapolated.

/// Steps at the model rate between two log lines of one kind.
const LOG_EVERY: u64 = 200;

/// Why a step did not end on a converged state of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Degradation {
    /// The step would have overrun its period: it ended with the state and forces of
    /// its last linearised solve (a frozen tangent).
    FrozenTangent,
    /// A large jump of the probe was solved through intermediate targets.
    SubStepped,
    /// No solve converged: the step kept the last good state and gave the forces its
    /// tangent predicts for the new targets (the local stiffness, extrapolated).
    HeldLastState,
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
    /// Steps held in a row now.
    pub held_in_a_row: u64,
    /// The last failure a held step recovered from, in words.
    pub last_failure: Option<String>,
}

impl StepHealth {
    /// Counts one `kind`, logging it (`why`: the failure it recovered from).
    pub(super) fn count(&mut self, kind: Degradation, why: Option<&str>) {
        let counter = match kind {
            Degradation::FrozenTangent => &mut self.frozen_tangent,
            Degradation::SubStepped => &mut self.sub_stepped,
            Degradation::HeldLastState => &mut self.held,
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
            };
            match why {
                Some(why) => tracing::warn!("{what} ({why}; {n} such steps so far)"),
                None => tracing::warn!("{what} ({n} such steps so far)"),
            }
        }
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
