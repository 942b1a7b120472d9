//! The check of Newton's quadratic convergence the full and reduced solver tests share.

use palpa::nonlinear::NewtonReport;

/// Asserts that `report`'s residuals, relative to the one before iteration `from`,
/// converge quadratically once in the basin: e_{k+1} ≤ 10 e_k² for every full step from
/// `from` on with e_k < 1e-2 and e_{k+1} above the round-off `floor`, and at least one
/// such step. `what` names the solve in the messages.
pub fn assert_quadratic(report: &NewtonReport, from: usize, floor: f64, what: &str) {
    let e: Vec<f64> = report
        .residuals
        .iter()
        .map(|r| r / report.residuals[from])
        .collect();
    println!(
        "{what}: relative residuals {}, steps {:?}",
        e.iter()
            .map(|x| format!("{x:.1e}"))
            .collect::<Vec<_>>()
            .join(" "),
        report.steps
    );
    let mut quadratic = 0;
    for k in from..e.len() - 1 {
        if report.steps[k] == 1.0 && e[k] < 1e-2 && e[k + 1] > floor {
            assert!(
                e[k + 1] <= 10.0 * e[k] * e[k],
                "{what}: {} after {}",
                e[k + 1],
                e[k]
            );
            quadratic += 1;
        }
    }
    assert!(
        quadratic >= 1,
        "{what}: no iteration in the quadratic regime: {e:?}"
    );
}
