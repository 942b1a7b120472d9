//! Warnings for values inside every bound that are almost surely a unit mistake (palpa
//! is in SI units: m, Pa, s): each names the value and the likely mistake. They are
//! warnings, not errors: a foam phantom or a 2 m model may be meant.

use crate::device::mapped::Workspace;
use crate::device::replay::Trajectory;
use crate::Vec3;

/// Softest Young's modulus that is not a warning (Pa): fat and brain are ~0.5–2 kPa.
pub const MIN_PLAUSIBLE_YOUNG: f64 = 100.0;
/// Stiffest Young's modulus that is not a warning (Pa): tendon and cartilage reach
/// ~1 GPa.
pub const MAX_PLAUSIBLE_YOUNG: f64 = 1e9;
/// Smallest and largest mesh (m across, the bounding box's diagonal) that is not a
/// warning.
pub const PLAUSIBLE_SIZE: std::ops::RangeInclusive<f64> = 1e-3..=1.0;

/// Why a Young's modulus (Pa) looks like a unit mistake, if it does.
pub fn young_warning(young: f64) -> Option<String> {
    if young < MIN_PLAUSIBLE_YOUNG {
        Some(format!(
            "E = {young} Pa is softer than any tissue (fat and brain: ~1 kPa): moduli are \
             in Pa, was it meant in kPa (E = {:e})?",
            young * 1e3
        ))
    } else if young > MAX_PLAUSIBLE_YOUNG {
        Some(format!(
            "E = {young:e} Pa is stiffer than 1 GPa (tendon, cartilage): moduli are in Pa, \
             not in kPa or mPa"
        ))
    } else {
        None
    }
}

/// Why a mesh `size` m across looks like a unit mistake, if it does.
pub fn mesh_size_warning(size: f64) -> Option<String> {
    if size > *PLAUSIBLE_SIZE.end() {
        Some(format!(
            "the mesh is {size:.3} m across, larger than any organ: lengths are in m; is the \
             mesh in millimetres (scale = 0.001) or centimetres (scale = 0.01)?"
        ))
    } else if size < *PLAUSIBLE_SIZE.start() {
        Some(format!(
            "the mesh is {:.3} mm across, smaller than 1 mm: lengths are in m; was a scale \
             applied twice, or the mesh in metres already?",
            size * 1e3
        ))
    } else {
        None
    }
}

/// Why a trajectory looks like a unit mistake against a scene whose mesh spans `lo`..`hi`
/// (m) with a probe of `radius` (m), its device positions taken to the scene by `map`:
/// it never comes within the scene's box (millimetres?), its median time step is not
/// about 1 ms, or it lasts more than 10 × its row count in ms (times in ms?).
pub fn trajectory_warnings(
    trajectory: &Trajectory,
    map: &Workspace,
    (lo, hi): (Vec3, Vec3),
    radius: f64,
) -> Vec<String> {
    let samples = trajectory.samples();
    let mut warnings = Vec::new();
    let margin = radius + 0.05 * (hi - lo).norm();
    let inside = |p: &Vec3| (0..3).all(|a| p[a] >= lo[a] - margin && p[a] <= hi[a] + margin);
    let scene: Vec<Vec3> = samples.iter().map(|s| map.to_scene(&s.position)).collect();
    if !scene.iter().any(inside) {
        let (min, max) = scene.iter().fold(
            (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
            |(a, b), p| (a.inf(p), b.sup(p)),
        );
        let reach = (max - min).norm().max(max.amax()).max(min.amax());
        let hint = if reach > 10.0 * (hi - lo).norm() {
            " (positions in millimetres?)"
        } else {
            ""
        };
        warnings.push(format!(
            "the probe never comes within the scene's box: it moves within \
             ({:.4}, {:.4}, {:.4})–({:.4}, {:.4}, {:.4}) m, the tissue lies within \
             ({:.4}, {:.4}, {:.4})–({:.4}, {:.4}, {:.4}) m{hint}; positions are in m",
            min.x, min.y, min.z, max.x, max.y, max.z, lo.x, lo.y, lo.z, hi.x, hi.y, hi.z
        ));
    }
    if samples.len() >= 2 {
        let mut steps: Vec<f64> = samples.windows(2).map(|w| w[1].t - w[0].t).collect();
        steps.sort_by(f64::total_cmp);
        let step = steps[steps.len() / 2];
        if !(0.5e-3..=2e-3).contains(&step) {
            warnings.push(format!(
                "the trajectory's time step is {} ms (median), not about 1 ms: the haptic \
                 loop holds each sample until the next; times are in s{}",
                step * 1e3,
                if step >= 0.5 {
                    " (in milliseconds?)"
                } else {
                    ""
                }
            ));
        }
    }
    let duration = trajectory.duration();
    if duration > 10.0 * samples.len() as f64 * 1e-3 {
        warnings.push(format!(
            "the trajectory lasts {duration} s over {} rows, more than 10 ms a row: times \
             are in s; are they in milliseconds?",
            samples.len()
        ));
    }
    warnings
}

/// Why pressing to `depth` (m) where the tissue under the point is `thickness` (m) thick
/// looks like a unit mistake, if it does.
pub fn indentation_warning(depth: f64, thickness: f64) -> Option<String> {
    (depth > 0.5 * thickness).then(|| {
        format!(
            "a press {:.1} mm deep is deeper than half the {:.1} mm of tissue under the \
             point: depths are in m (1 mm = 0.001)",
            depth * 1e3,
            thickness * 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::replay::TrajectorySample;

    fn trajectory(points: &[(f64, [f64; 3])]) -> Trajectory {
        let samples = points
            .iter()
            .map(|&(t, p)| TrajectorySample {
                t,
                position: Vec3::from(p),
                buttons: 0,
                force: None,
            })
            .collect();
        Trajectory::new(samples, "test").unwrap()
    }

    #[test]
    fn moduli_and_sizes_outside_tissue_are_named_with_the_likely_unit() {
        assert!(young_warning(30.0).unwrap().contains("kPa (E = 3e4)"));
        assert!(young_warning(30e3).is_none() && young_warning(1e9).is_none());
        assert!(young_warning(2e9).unwrap().contains("1 GPa"));
        assert!(mesh_size_warning(9.7).unwrap().contains("millimetres"));
        assert!(mesh_size_warning(5e-4).unwrap().contains("0.500 mm"));
        assert!(mesh_size_warning(0.1).is_none());
    }

    #[test]
    fn trajectories_in_millimetres_or_with_times_in_milliseconds_are_named() {
        let block = (Vec3::new(-0.05, -0.05, -0.04), Vec3::new(0.05, 0.05, 0.0));
        let at_1khz: Vec<(f64, [f64; 3])> = (0..100)
            .map(|i| (i as f64 * 1e-3, [0.0, 0.0, 0.005 - 1e-4 * i as f64]))
            .collect();
        let fine = trajectory(&at_1khz);
        assert!(trajectory_warnings(&fine, &Workspace::IDENTITY, block, 0.0).is_empty());
        let mm: Vec<(f64, [f64; 3])> = at_1khz
            .iter()
            .map(|&(t, p)| (t, p.map(|x| 1e3 * x + 20.0)))
            .collect();
        let w = trajectory_warnings(&trajectory(&mm), &Workspace::IDENTITY, block, 0.0);
        assert!(w.len() == 1 && w[0].contains("millimetres"), "{w:?}");
        let ms: Vec<(f64, [f64; 3])> = at_1khz.iter().map(|&(t, p)| (t * 1e3, p)).collect();
        let w = trajectory_warnings(&trajectory(&ms), &Workspace::IDENTITY, block, 0.0);
        assert!(
            w.len() == 2 && w.iter().all(|w| w.contains("milliseconds")),
            "{w:?}"
        );
    }

    #[test]
    fn presses_deeper_than_half_the_tissue_are_named() {
        assert!(indentation_warning(0.05, 0.04)
            .unwrap()
            .contains("50.0 mm deep"));
        assert!(indentation_warning(0.004, 0.04).is_none());
    }
}
