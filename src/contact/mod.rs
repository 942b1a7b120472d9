//! Contact: a BVH over the deformed surface, the god-object proxy of the probe, the
//! contact patch under its tip, and Coulomb stick/slip friction.
//!
//! Pipeline per model step: the model refits the [`SurfaceBvh`] to the current
//! surface positions, then [`Proxy::update`] moves the proxy toward the probe and
//! reports the [`Contact`] (triangle, barycentric point, normal, depth);
//! [`ContactPatch`] spreads it over the surface nodes of the tip's footprint, which the
//! tissue model enforces as a unilateral constraint; [`StickPoint`] adds the
//! tangential friction force on the probe.

pub mod bvh;
pub mod friction;
pub mod gap;
pub mod geometry;
pub mod patch;
pub mod proxy;
pub mod sphere;

pub use bvh::{Closest, SegmentHit, SurfaceBvh};
pub use friction::{Friction, FrictionForce, FrictionPhase, StickPoint};
pub use patch::{ContactPatch, MAX_PATCH_NODES};
pub use proxy::{Contact, Proxy};
pub use sphere::{SphereContact, SphereRows};
