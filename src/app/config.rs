//! What a scene says about the parts beside the tissue, turned into their settings: the
//! device it names, the device's workspace mapping, the haptic loop's configuration and
//! safety limits, and the stream server's settings.

use std::net::SocketAddr;

use crate::app::scene::BuiltScene;
use crate::device::choice::DeviceChoice;
use crate::device::mapped::Workspace;
use crate::device::DeviceRating;
use crate::haptic::{HapticConfig, SafetyLimits};
use crate::scene::{self, DeviceKind, DeviceSpec, SafetySpec, Scene, WorkspaceSpec};
use crate::stream::{ProbeWorkspace, StreamConfig, StreamRegion};

/// How far past the device's force clamp the tissue may be pushed: the hand must feel
/// the clamp, not the modal model's ringing around the cap after a jump (measured in
/// docs/benchmarks.md, "force cap").
pub const FORCE_CAP_MARGIN: f64 = 2.0;

/// The device the scene's `[device]` section asks for (paths resolved against the scene
/// file).
pub fn device_choice(scene: &Scene) -> DeviceChoice {
    let d = &scene.device;
    let path = |p: &Option<std::path::PathBuf>| p.as_deref().map(|p| scene.resolve(p));
    match d.kind {
        DeviceKind::Auto => DeviceChoice::Auto,
        DeviceKind::Sim => DeviceChoice::Sim(None),
        DeviceKind::Hid => DeviceChoice::Hid(path(&d.profile)),
        DeviceKind::Replay => DeviceChoice::Replay(
            path(&d.trajectory).expect("validated: a replay device names its trajectory"),
        ),
        DeviceKind::Haply => DeviceChoice::Haply(crate::device::haply::DEFAULT_URL.into()),
        DeviceKind::Openhaptics => DeviceChoice::OpenHaptics(None),
        DeviceKind::Dhd => DeviceChoice::Dhd(None),
    }
}

/// The mapping a `[device.workspace]` section describes.
pub fn workspace(spec: &WorkspaceSpec) -> Workspace {
    Workspace::new(spec.scale, spec.offset.into(), spec.rotation_deg)
}

/// The mapping `[device.workspace]` gives, else the identity (what virtual devices,
/// whose positions are scene positions, use).
pub fn given_mapping(device: &DeviceSpec) -> Workspace {
    device
        .workspace
        .as_ref()
        .map_or(Workspace::IDENTITY, workspace)
}

/// The safety limits of `spec` for a device with `rating`: the scene's values where
/// given (force and stiffness never above the rating), the device's defaults elsewhere.
pub fn safety_limits(spec: &SafetySpec, rating: DeviceRating) -> SafetyLimits {
    let d = SafetyLimits::for_device(rating);
    SafetyLimits {
        max_force: spec.max_force.map_or(d.max_force, |f| f.min(d.max_force)),
        max_force_rate: spec.max_force_rate.unwrap_or(d.max_force_rate),
        ramp_time: spec.ramp_time.unwrap_or(d.ramp_time),
        max_stiffness: spec
            .max_stiffness
            .map_or(d.max_stiffness, |k| k.min(d.max_stiffness)),
        stale_sample_timeout: spec.stale_sample_timeout.unwrap_or(d.stale_sample_timeout),
        model_timeout: spec.model_timeout.unwrap_or(d.model_timeout),
        fade_time: spec.fade_time.unwrap_or(d.fade_time),
        passivity_max_damping: spec.passivity_max_damping.or(d.passivity_max_damping),
    }
}

/// Fits the built scene to a device rated `rating` and returns the haptic loop's
/// configuration (the scene's rates, force strategy and safety limits). The tissue is
/// then never pushed harder than the device may render (the force clamp, with
/// [`FORCE_CAP_MARGIN`]), so a deep press saturates in the model as on the hand.
pub fn attach_device(built: &mut BuiltScene, rating: DeviceRating) -> HapticConfig {
    let scene = &built.scene;
    let mut c = HapticConfig::new(safety_limits(&scene.safety, rating));
    c.tick_period = 1.0 / scene.rates.haptic;
    c.ticks_per_model_step = scene.rates.ticks_per_model_step();
    c.strategy = scene.force.strategy;
    built
        .model
        .set_force_cap(FORCE_CAP_MARGIN * c.limits.max_force);
    c
}

/// How a device rated `rating` maps into the scene, and one line saying how it was
/// chosen: `[device.workspace]` when the scene gives it; else a physical device's
/// workspace fitted to the mesh's bounding box ([`Workspace::fit`]); else (virtual
/// devices) the identity.
pub fn device_mapping(built: &BuiltScene, rating: &DeviceRating) -> (Workspace, String) {
    let describe = |w: &Workspace| {
        format!(
            "scale {:.3} (scene m per device m), device origin at ({:.4}, {:.4}, {:.4}) m",
            w.scale, w.offset.x, w.offset.y, w.offset.z
        )
    };
    if let Some(spec) = &built.scene.device.workspace {
        let w = workspace(spec);
        return (w, format!("{} (from [device.workspace])", describe(&w)));
    }
    match &rating.workspace {
        Some(device) => {
            let (lo, hi) = built.mesh.mesh.bounds();
            let w = Workspace::fit(device, lo, hi);
            let h = device.half_extent * 1e3;
            let how = format!(
                "{}: the device's ±({:.0}, {:.0}, {:.0}) mm box fitted to the scene's bounding \
                 box, its centre at the middle of the top (set [device.workspace] to choose)",
                describe(&w),
                h.x,
                h.y,
                h.z
            );
            (w, how)
        }
        None => (
            Workspace::IDENTITY,
            "device positions are scene positions".into(),
        ),
    }
}

/// The stream server's settings for `scene`, bound to `bind`, with viewers' probe
/// targets kept in `probe_workspace` (m, scene frame); an error names the scene file and
/// its key (`stream.token` for a token too weak to guard control; the token itself is
/// never printed).
pub fn stream_config(
    scene: &Scene,
    bind: SocketAddr,
    probe_workspace: Option<ProbeWorkspace>,
) -> Result<StreamConfig, String> {
    let defaults = StreamConfig::default();
    let config = StreamConfig {
        bind,
        frame_rate_hz: scene.rates.visual,
        max_clients: scene.stream.max_clients,
        max_connections: defaults.max_connections.max(scene.stream.max_clients),
        control_token: scene.stream.token.clone(),
        allowed_origins: scene.stream.allowed_origins.clone(),
        allowed_hosts: scene.stream.allowed_hosts.clone(),
        probe_workspace,
        ..defaults
    };
    config.validate().map_err(|e| {
        let invalid = match e.split_once(": ") {
            // The server's errors name their field as `stream.<field>: …`; the scene
            // calls the control token `stream.token`.
            Some(("stream.control_token", why)) => scene.invalid("stream.token", why),
            Some((key, why)) if key.starts_with("stream.") => scene.invalid(key, why),
            _ => scene.invalid("stream", e),
        };
        invalid.to_string()
    })?;
    Ok(config)
}

/// The regions of the scene's non-default materials with their boundary at rest, for
/// the viewers' x-ray view.
pub fn stream_regions(built: &BuiltScene) -> Result<Vec<StreamRegion>, String> {
    let regions = scene::material_regions(&built.scene, &built.mesh).map_err(|e| e.to_string())?;
    let mesh = &built.mesh.mesh;
    Ok(regions
        .iter()
        .map(|r| StreamRegion::of_tetrahedra(&r.name, r.young, mesh, &r.tets))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::stream_regions;
    use crate::app::scene::build;
    use crate::scene::Scene;

    #[test]
    fn the_default_scene_has_one_region_the_inclusion_sphere() {
        let cache = tempfile::tempdir().unwrap();
        let mut scene = Scene::embedded_default();
        scene.backend.kind = crate::scene::BackendKind::Condensed;
        // The regions need the mesh only: no surface column is computed ahead.
        scene.backend.condensed.precompute_cap = 0;
        let built = build(scene, cache.path(), &mut |_| {}).unwrap();
        let regions = stream_regions(&built).unwrap();
        assert_eq!(
            regions.len(),
            1,
            "only the inclusion differs from the default"
        );
        let lump = &regions[0];
        assert_eq!(lump.name, "inclusion");
        assert_eq!(lump.young, 240e3);
        // The lump's boundary: every vertex within a tetrahedron's size of the 1 cm
        // sphere around (0, 0, −1.5 cm) (cells are 5 mm), and the surface closed.
        let centre = crate::Vec3::new(0.0, 0.0, -0.015);
        for p in &lump.rest_positions {
            let r = (p - centre).norm();
            assert!(r < 0.01 + 0.0087, "vertex {p:?} is {r} m from the centre");
        }
        let mut edges = std::collections::HashMap::new();
        for t in &lump.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *edges.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        assert!(!lump.triangles.is_empty());
        assert!(
            edges.values().all(|&n| n == 2),
            "every edge has two triangles"
        );
        // Outward orientation: the enclosed volume (divergence theorem) is positive and
        // near the sphere's 4.19 cm³ (voxelised by 5 mm cells).
        let volume: f64 = lump
            .triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| lump.rest_positions[i as usize] - centre);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum();
        assert!(
            (2e-6..7e-6).contains(&volume),
            "lump volume {volume} m³, sphere 4.19e-6 m³"
        );
    }
}
