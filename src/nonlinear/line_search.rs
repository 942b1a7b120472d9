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
/// Returns α and the energy there; `None` below [`SHORTEST`]. A step along which Π has
/// no slope at all is taken whole: with a positive definite tangent it moves only the
/// multipliers (its displacement part is zero), so there is nothing to search, and
/// neither test could pass (Π does not change beyond its round-off).
pub(super) fn backtrack(
    energy: f64,
    slope: f64,
    mut trial: impl FnMut(Trial) -> Option<f64>,
) -> Option<(f64, f64)> {
    if slope == 0.0 {
        return trial(Trial::At(1.0)).map(|e| (1.0, e));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Π along the step: Π(α) = `energy` + `slope` α + `curvature` α², and its slope.
    fn quadratic(energy: f64, slope: f64, curvature: f64) -> impl FnMut(Trial) -> Option<f64> {
        let mut at = 0.0;
        move |t| match t {
            Trial::At(alpha) => {
                at = alpha;
                Some(energy + slope * alpha + curvature * alpha * alpha)
            }
            Trial::Slope => Some(slope + 2.0 * curvature * at),
        }
    }

    #[test]
    fn a_newton_step_on_a_quadratic_is_taken_whole() {
        // Minimum at α = 1: Π(α) = −2α + α².
        let (alpha, e) = backtrack(0.0, -2.0, quadratic(0.0, -2.0, 1.0)).unwrap();
        assert_eq!(alpha, 1.0);
        assert_eq!(e, -1.0);
    }

    #[test]
    fn a_step_too_long_is_halved_until_armijo_holds() {
        // Minimum at α = 1/8: α = 1, 1/2 raise Π; 1/4 is back at Π(0); 1/8 passes.
        let (alpha, _) = backtrack(0.0, -2.0, quadratic(0.0, -2.0, 8.0)).unwrap();
        assert_eq!(alpha, 0.125);
    }

    #[test]
    fn an_ascent_step_is_refused() {
        assert!(backtrack(0.0, 1.0, quadratic(0.0, 1.0, 1.0)).is_none());
    }

    #[test]
    fn a_step_without_slope_is_taken_whole_though_round_off_raises_the_energy() {
        // What the reduced Newton met on the default block (graded mesh)
        // (over the lump, Veronda–Westmann γ = 5, tests/nonlinear_reduced.rs): a
        // step that moved only the multipliers, Π one ulp higher at every α and a slope
        // of 1e-38 there, which neither test passes.
        let energy = -3.759_415_954_737_158_4e-5;
        let raised = energy + 6.8e-21;
        let (alpha, e) = backtrack(energy, 0.0, |t| match t {
            Trial::At(_) => Some(raised),
            Trial::Slope => Some(4.7e-38),
        })
        .unwrap();
        assert_eq!((alpha, e), (1.0, raised));
    }
}
