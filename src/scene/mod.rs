//! Scenes: what a scene file says (mesh, materials, backend, contact, rates, device, stream).
