//! `[[fixed]]`: the rules whose union is the set of fixed (Dirichlet) nodes.

use serde::Deserialize;

use super::check::{Check, MAX_COORDINATE};
use super::materials::RegionRef;
use super::SceneError;

/// A coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AxisName {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl AxisName {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One fixed-node rule; a `[[fixed]]` table has exactly one of these keys.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FixSpec {
    /// Nodes with coordinate `axis` ≤ mesh minimum + `distance` (m).
    Below {
        /// Axis tested.
        axis: AxisName,
        /// Distance above the lowest node (m), ≥ 0.
        #[serde(default)]
        distance: f64,
    },
    /// Nodes inside an axis-aligned box (m).
    Box {
        /// Lower corner (m).
        min: [f64; 3],
        /// Upper corner (m).
        max: [f64; 3],
    },
    /// Every node of the region's elements.
    Region(RegionRef),
    /// Node indices (0-based, file order).
    Nodes(Vec<usize>),
}

/// Checks every rule's numbers.
pub(super) fn validate(rules: &[FixSpec], c: &Check) -> Result<(), SceneError> {
    for (i, rule) in rules.iter().enumerate() {
        match rule {
            FixSpec::Below { distance, .. } => c.non_negative_at_most(
                &format!("fixed[{i}].below.distance"),
                *distance,
                MAX_COORDINATE,
            )?,
            FixSpec::Box { min, max } => c.ordered(&format!("fixed[{i}].box"), min, max)?,
            FixSpec::Region(_) | FixSpec::Nodes(_) => {}
        }
    }
    Ok(())
}
