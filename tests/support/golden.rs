//! Golden CSV outputs of the replay tests: rewritten with `PALPA_REGENERATE=1`, else
//! compared column by column within a tolerance.

use std::path::Path;

/// Checks `text` (CSV: one header line, then numeric rows whose first column is the time
/// in s) against the golden file at `path`: as many rows, every value within `tolerance`
/// (in the columns' own units). With `PALPA_REGENERATE` set, writes `text` there instead.
pub fn check(path: &Path, text: &str, tolerance: f64) {
    if std::env::var_os("PALPA_REGENERATE").is_some() {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let golden =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows = |s: &str| -> Vec<Vec<f64>> {
        s.lines()
            .skip(1)
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect()
    };
    let (got, want) = (rows(text), rows(&golden));
    assert_eq!(got.len(), want.len(), "{}: rows", path.display());
    for (g, w) in got.iter().zip(&want) {
        for (k, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= tolerance,
                "{}: t = {} column {k}: {a} against the golden {b}",
                path.display(),
                g[0],
            );
        }
    }
}
