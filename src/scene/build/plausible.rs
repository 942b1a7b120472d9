//! Warnings for values inside every bound that are almost surely a unit mistake (palpa
//! is in SI units: m, Pa, s): each names the value and the likely mistake. They are
//! warnings, not errors: a foam phantom or a 2 m model may be meant.

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
    fn presses_deeper_than_half_the_tissue_are_named() {
        assert!(indentation_warning(0.05, 0.04)
            .unwrap()
            .contains("50.0 mm deep"));
        assert!(indentation_warning(0.004, 0.04).is_none());
    }
}
