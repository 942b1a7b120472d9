//! Contact: BVH over the deformed surface and the god-object proxy of the probe.
