//! A check of the scene's contact patch against its mesh: a patch keeps at most
//! [`MAX_PATCH_NODES`] nodes, so a radius covering more surface nodes silently gives a
//! smaller footprint, and one that shrinks as the mesh is refined.

use std::collections::HashMap;

use crate::contact::MAX_PATCH_NODES;
use crate::Vec3;

/// The most surface nodes (of `surface_nodes`, at rest positions `rest`, m) within
/// `radius` (m) of any one of them: how many a contact patch of that radius centred on a
/// node would hold. Hashes the nodes into cubes of the radius's size, so each node
/// looks at its 27 neighbouring cubes only.
pub fn most_nodes_within(rest: &[Vec3], surface_nodes: &[usize], radius: f64) -> usize {
    if !(radius > 0.0 && radius.is_finite()) {
        return 0;
    }
    let cube = |p: &Vec3| p.map(|x| (x / radius).floor() as i64);
    let mut cubes: HashMap<[i64; 3], Vec<Vec3>> = HashMap::new();
    for &v in surface_nodes {
        let c = cube(&rest[v]);
        cubes.entry([c.x, c.y, c.z]).or_default().push(rest[v]);
    }
    let r2 = radius * radius;
    surface_nodes
        .iter()
        .map(|&v| {
            let (p, c) = (rest[v], cube(&rest[v]));
            let mut count = 0;
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        if let Some(list) = cubes.get(&[c.x + dx, c.y + dy, c.z + dz]) {
                            count += list
                                .iter()
                                .filter(|q| (*q - p).norm_squared() <= r2)
                                .count();
                        }
                    }
                }
            }
            count
        })
        .max()
        .unwrap_or(0)
}

/// What to tell the user when a patch of `radius` (m; `given` in the scene, else the
/// default of twice the mean surface edge) would hold `nodes` surface nodes, more than a
/// patch keeps; `None` when it fits.
pub fn crowded_patch_warning(radius: f64, nodes: usize, given: bool) -> Option<String> {
    (nodes > MAX_PATCH_NODES).then(|| {
        // The count grows with the area, r².
        let fits = radius * (MAX_PATCH_NODES as f64 / nodes as f64).sqrt();
        let which = if given {
            format!("contact.patch_radius = {radius} m")
        } else {
            format!(
                "the contact patch's default radius (twice the mean surface edge), {radius:.4} m,"
            )
        };
        format!(
            "{which} covers up to {nodes} surface nodes of this mesh, but a contact patch \
             keeps its {MAX_PATCH_NODES} largest weights: the probe's footprint is smaller \
             than asked and shrinks as the mesh is refined; set contact.patch_radius to at \
             most about {fits:.4} m"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_nodes_of_the_most_crowded_patch() {
        // A 11 × 11 grid of spacing 1: a radius of 1.5 around an inner node holds the
        // node, its 4 edge and 4 diagonal neighbours (√2 ≤ 1.5 < 2).
        let rest: Vec<Vec3> = (0..121)
            .map(|i| Vec3::new((i % 11) as f64, (i / 11) as f64, 0.0))
            .collect();
        let all: Vec<usize> = (0..121).collect();
        assert_eq!(most_nodes_within(&rest, &all, 1.5), 9);
        assert_eq!(most_nodes_within(&rest, &all, 0.5), 1);
        assert_eq!(most_nodes_within(&rest, &all, 0.0), 0);
        // Radius 4.5 inside the grid: every (i, j) with i² + j² ≤ 20.25, 69 nodes.
        let expected = (-4i32..=4)
            .flat_map(|i| (-4i32..=4).map(move |j| i * i + j * j))
            .filter(|&d2| d2 as f64 <= 20.25)
            .count();
        assert_eq!(most_nodes_within(&rest, &all, 4.5), expected);
        let warning = crowded_patch_warning(4.5, expected, true).unwrap();
        assert!(
            warning.starts_with("contact.patch_radius = 4.5 m covers up to 69 surface nodes"),
            "{warning}"
        );
        // 48 of 69 nodes fit in a radius of about 4.5 √(48/69) = 3.7533.
        assert!(warning.ends_with("at most about 3.7533 m"), "{warning}");
        let default = crowded_patch_warning(4.5, expected, false).unwrap();
        assert!(
            default.starts_with("the contact patch's default radius"),
            "{default}"
        );
        assert!(crowded_patch_warning(1.5, 9, true).is_none());
    }
}
