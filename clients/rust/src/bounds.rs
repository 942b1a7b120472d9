//! What a server may make this client hold: names without hidden characters, a column
//! capacity within [`MAX_COLUMN_CAPACITY`], no more residual columns than the capacity
//! the server announced, columns that fit the scene, and all of it within a byte budget
//! ([`Limits::max_held_bytes`]). A server that breaks one of these is refused with a
//! protocol error naming the rule, before anything grows.

use palpa_protocol as wire;

use crate::ClientError;

/// Largest column capacity a client accepts from a server's `SceneInit` (the server
/// asks for 256).
pub const MAX_COLUMN_CAPACITY: u32 = 4096;
/// Default byte budget for the scene and the residual columns held together.
pub const DEFAULT_MAX_HELD_BYTES: usize = 512 << 20;
/// Longest scene or material name accepted (characters).
const MAX_NAME: usize = 1024;

/// The bounds of one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the decoded scene and the residual columns may take together.
    pub max_held_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_held_bytes: DEFAULT_MAX_HELD_BYTES,
        }
    }
}

fn refused(why: String) -> ClientError {
    ClientError::Protocol(why)
}

/// Checks the server's hello: its scene name has no hidden character.
pub(crate) fn check_hello(hello: &wire::ServerHello) -> Result<(), ClientError> {
    wire::text::check_name(&hello.scene_name, MAX_NAME)
        .map_err(|why| refused(format!("the server's scene name {why}")))
}

/// Bytes a decoded scene holds.
pub(crate) fn scene_bytes(scene: &wire::SceneInit) -> usize {
    let regions: usize = scene
        .regions
        .iter()
        .map(|r| r.name.len() + 12 * r.triangles.len() + 12 * r.rest_positions.len())
        .sum();
    12 * scene.triangles.len()
        + 12 * scene.rest_positions.len()
        + scene
            .modal_basis
            .as_ref()
            .map_or(0, |b| 12 * b.vectors.len())
        + regions
}

/// Checks the scene: names, the column capacity, and its size against the budget.
pub(crate) fn check_scene(scene: &wire::SceneInit, limits: &Limits) -> Result<usize, ClientError> {
    for region in &scene.regions {
        wire::text::check_name(&region.name, MAX_NAME)
            .map_err(|why| refused(format!("a material region's name {why}")))?;
    }
    if scene.column_capacity > MAX_COLUMN_CAPACITY {
        return Err(refused(format!(
            "the server asks this client to hold {} residual columns; at most \
             {MAX_COLUMN_CAPACITY} are accepted",
            scene.column_capacity
        )));
    }
    let bytes = scene_bytes(scene);
    if bytes > limits.max_held_bytes {
        return Err(refused(format!(
            "the scene takes {bytes} bytes, more than this client's budget of {} bytes",
            limits.max_held_bytes
        )));
    }
    Ok(bytes)
}

/// Bytes one column holds.
pub(crate) fn column_bytes(column: &wire::ResidualColumn) -> usize {
    std::mem::size_of::<wire::ColumnEntry>() * column.entries.len()
}

/// Checks that `column` may join `held` (which takes `held_bytes` with the scene): within
/// the announced capacity (a column replacing one of the same node always is), one
/// entry per surface vertex at most, every vertex in the scene, within the budget.
pub(crate) fn admit_column(
    column: &wire::ResidualColumn,
    held: &wire::ColumnCache,
    scene: &wire::SceneInit,
    held_bytes: usize,
    limits: &Limits,
) -> Result<(), ClientError> {
    let replaces = held.get(column.node);
    let capacity = scene.column_capacity as usize;
    if replaces.is_none() && held.len() >= capacity {
        return Err(refused(format!(
            "the server sent residual column {} while this client holds {} columns, its \
             announced capacity of {capacity}",
            column.node,
            held.len()
        )));
    }
    let vertices = scene.rest_positions.len();
    if column.entries.len() > vertices {
        return Err(refused(format!(
            "residual column {} has {} entries; the scene has {vertices} surface vertices",
            column.node,
            column.entries.len()
        )));
    }
    if let Some(e) = column
        .entries
        .iter()
        .find(|e| e.vertex as usize >= vertices)
    {
        return Err(refused(format!(
            "residual column {} names surface vertex {}; the scene has {vertices}",
            column.node, e.vertex
        )));
    }
    let freed = replaces.map_or(0, column_bytes);
    let after = held_bytes - freed.min(held_bytes) + column_bytes(column);
    if after > limits.max_held_bytes {
        return Err(refused(format!(
            "residual column {} would make this client hold {after} bytes, more than its \
             budget of {} bytes",
            column.node, limits.max_held_bytes
        )));
    }
    Ok(())
}
