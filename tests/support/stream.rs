//! A real snapshot producer for the stream tests and benchmarks: a box of tissue whose
//! surface deforms in an analytic modal basis, animated by a 200 Hz thread that obeys
//! probe control commands like the sim device will. The lead substitutes the real modal
//! model; the stream only sees snapshots, so nothing here is stream-specific.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use palpa::mesh::generate::box_mesh;
use palpa::stream::{
    control_channel, snapshot_slot, ControlReceiver, ControlSender, ProbeControl,
    SnapshotDeformation, SnapshotReader, SnapshotStylus, SnapshotWriter, StreamScene,
    VisualSnapshot,
};
use palpa::Vec3;

/// Box size (m): 10 cm × 10 cm × 4 cm, top face at z = 0.04.
pub const SIZE: [f64; 3] = [0.1, 0.1, 0.04];
/// Contact stiffness of the analytic tissue (N/m).
pub const STIFFNESS: f64 = 300.0;
/// Radius of the residual dent around the probe carried as per-vertex corrections (m).
pub const DENT_RADIUS: f64 = 0.02;

/// The analytic tissue: bending modes sin(aπx/Lx)·sin(bπy/Ly)·(z/Lz) in z, a few
/// lateral modes, and a probe dent that the modes reproduce at the probe (least-norm
/// modal coordinates) plus a local residual carried as corrections.
pub struct AnalyticTissue {
    /// The streamed scene (modal or positions).
    pub scene: StreamScene,
    modes: Vec<(usize, usize)>,
    /// The stylus every snapshot shows (none by default).
    pub stylus: SnapshotStylus,
}

impl AnalyticTissue {
    /// A modal scene on a box mesh of `cells`, with `modes` analytic modes.
    pub fn modal(cells: [usize; 3], mode_count: usize) -> Self {
        let mut tissue = Self::positions(cells);
        let modes: Vec<(usize, usize)> = (1..=8)
            .flat_map(|a| (1..=8).map(move |b| (a, b)))
            .take(mode_count)
            .collect();
        let rest = tissue.scene.rest_positions.clone();
        let shapes = modes.clone();
        tissue.scene = tissue
            .scene
            .with_modal_basis(mode_count, move |v, j| shape(shapes[j], &rest[v]));
        tissue.modes = modes;
        tissue.scene.name = "analytic box".into();
        tissue
    }

    /// A scene on a box mesh of `cells` whose frames carry vertex positions.
    pub fn positions(cells: [usize; 3]) -> Self {
        let mesh = box_mesh(Vec3::new(SIZE[0], SIZE[1], SIZE[2]), cells).expect("box mesh");
        let surface = StreamScene::from_mesh_surface("analytic box (positions)", &mesh);
        Self {
            scene: surface.scene,
            modes: Vec::new(),
            stylus: SnapshotStylus::default(),
        }
    }

    /// Where the probe idles when nobody drives it: above the centre of the top face.
    pub fn idle_probe() -> Vec3 {
        Vec3::new(0.05, 0.05, SIZE[2] + 0.01)
    }

    /// The state at scene time `t` (s) with the probe at `probe` (m): a deterministic
    /// function, so tests can recompute what the server streamed.
    pub fn snapshot_at(&self, t: f64, probe: Vec3) -> VisualSnapshot {
        let depth = SIZE[2] - probe.z;
        let inside = (0.0..=SIZE[0]).contains(&probe.x) && (0.0..=SIZE[1]).contains(&probe.y);
        let in_contact = inside && depth > 0.0;
        let k = self.modes.len();
        // Breathing motion: every mode oscillates with a small amplitude (≤ 1 mm).
        let mut q: Vec<f64> = (0..k)
            .map(|j| {
                1e-3 / (j + 1) as f64
                    * (2.0 * std::f64::consts::PI * (0.5 + 0.3 * j as f64) * t).sin()
            })
            .collect();
        let mut corrections = Vec::new();
        if in_contact {
            // Least-norm modal coordinates that push the top surface at the probe down
            // by `depth`: q = -depth · φ(p) / |φ(p)|².
            let phi: Vec<f64> = self
                .modes
                .iter()
                .map(|&m| shape(m, &probe.xy().push(SIZE[2])).z)
                .collect();
            let norm2: f64 = phi.iter().map(|p| p * p).sum();
            if norm2 > 1e-12 {
                for (qj, pj) in q.iter_mut().zip(&phi) {
                    *qj = -depth * pj / norm2;
                }
            }
            for (v, x) in self.scene.rest_positions.iter().enumerate() {
                let r = (x.xy() - probe.xy()).norm();
                if (x.z - SIZE[2]).abs() < 1e-9 && r < DENT_RADIUS {
                    let residual = -0.3 * depth * (1.0 - r / DENT_RADIUS);
                    corrections.push((v as u32, Vec3::new(0.0, 0.0, residual)));
                }
            }
        }
        let deformation = if self.scene.modal_basis.is_some() {
            let mut field = vec![Vec3::zeros(); self.scene.rest_positions.len()];
            for (v, d) in &corrections {
                field[*v as usize] = *d;
            }
            SnapshotDeformation::Superposed {
                coordinates: q,
                loads: Vec::new(),
                field,
                field_from_loads: false,
            }
        } else {
            let rest = &self.scene.rest_positions;
            let mut p: Vec<Vec3> = rest
                .iter()
                .map(|x| {
                    x + Vec3::new(
                        0.0,
                        0.0,
                        1e-3 * (x.x * 60.0 + 3.0 * t).sin() * x.z / SIZE[2],
                    )
                })
                .collect();
            for (v, d) in &corrections {
                p[*v as usize] += d;
            }
            SnapshotDeformation::Positions(p)
        };
        VisualSnapshot {
            time: t,
            probe,
            proxy: probe,
            force: Vec3::new(0.0, 0.0, if in_contact { STIFFNESS * depth } else { 0.0 }),
            in_contact,
            depth: if in_contact { depth } else { 0.0 },
            normal: if in_contact { Vec3::z() } else { Vec3::zeros() },
            stylus: self.stylus,
            deformation,
        }
    }
}

fn shape((a, b): (usize, usize), x: &Vec3) -> Vec3 {
    let pi = std::f64::consts::PI;
    let s = (a as f64 * pi * x.x / SIZE[0]).sin() * (b as f64 * pi * x.y / SIZE[1]).sin();
    let lateral = if (a + b) % 3 == 0 {
        0.2 * s * x.z / SIZE[2]
    } else {
        0.0
    };
    Vec3::new(lateral, 0.0, s * x.z / SIZE[2])
}

/// The 200 Hz producer thread: the model thread's role for these tests.
pub struct Producer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Producer {
    /// Spawns the producer writing snapshots of `tissue` into `writer` and obeying
    /// commands from `control`.
    pub fn spawn(
        tissue: Arc<AnalyticTissue>,
        mut writer: SnapshotWriter,
        control: ControlReceiver,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut probe = AnalyticTissue::idle_probe();
            let mut step = 0u32;
            while !flag.load(Ordering::Relaxed) {
                while let Ok(command) = control.try_recv() {
                    match command {
                        ProbeControl::MoveTo(p) => probe = p,
                        ProbeControl::Release | ProbeControl::ResetTissue => {
                            probe = AnalyticTissue::idle_probe()
                        }
                    }
                }
                let t = start.elapsed().as_secs_f64();
                writer.publish(&tissue.snapshot_at(t, probe));
                step += 1;
                let next = start + Duration::from_secs_f64(step as f64 / 200.0);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Everything a test needs: the tissue, the producer, the slot reader for the server,
/// and the control sender for the server.
pub fn running_tissue(
    tissue: AnalyticTissue,
) -> (Arc<AnalyticTissue>, Producer, SnapshotReader, ControlSender) {
    let tissue = Arc::new(tissue);
    let initial = tissue.snapshot_at(0.0, AnalyticTissue::idle_probe());
    let (writer, reader) = snapshot_slot(initial);
    let (control_tx, control_rx) = control_channel(64);
    let producer = Producer::spawn(tissue.clone(), writer, control_rx);
    (tissue, producer, reader, control_tx)
}
