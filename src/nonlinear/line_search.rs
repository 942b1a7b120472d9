//! The backtracking line search both static solvers take along a Newton step.

/// What the line search asks of the state along the step.
pub(super) enum Trial {
    /// Move the trial state to α along the step and give its energy (J; `None` where an
    /// element inverts).
    At(f64),
    /// The slope of the energy along the step at the last trial state (J per unit α;
    /// `None` where an element inverts).
    Slope,
}

/// Shortest step tried before giving up.
const SHORTEST: f64 = 1e-10;

/// Halves α from 1 until the trial state passes Armijo on Π (from `energy` with slope
/// `slope` at α = 0), or, where Π's change is lost in its round-off (near the solution
/// W is a difference of O(μ) terms), the slope along the step at least halves.
/// Returns α and the energy there; `None` below [`SHORTEST`].
pub(super) fn backtrack(
    energy: f64,
    slope: f64,
    mut trial: impl FnMut(Trial) -> Option<f64>,
) -> Option<(f64, f64)> {
    let mut alpha = 1.0;
    while alpha >= SHORTEST {
        if let Some(e) = trial(Trial::At(alpha)) {
            let armijo = e <= energy + 1e-4 * alpha * slope;
            if armijo || trial(Trial::Slope).is_some_and(|s| s.abs() <= 0.5 * slope.abs()) {
                return Some((alpha, e));
            }
        }
        alpha *= 0.5;
    }
    None
}
