//! Contact: a BVH over the deformed surface and the god-object proxy of the probe.
//!
//! Pipeline per model step: the model refits the [`SurfaceBvh`] to the current
//! surface positions, then [`Proxy::update`] moves the proxy toward the probe and
//! reports the [`Contact`] (triangle, barycentric point, normal, depth) that the tissue
//! model turns into a unilateral constraint.

pub mod bvh;
pub mod geometry;
pub mod proxy;

pub use bvh::{Closest, SegmentHit, SurfaceBvh};
pub use proxy::{Contact, Proxy};
