//! The test vectors in `protocol/vectors/`: every `.bin` must decode to its `.json` and
//! re-encode to the same bytes. `PALPA_WRITE_VECTORS=1 cargo test -p palpa-protocol --test
//! vectors` rewrites them from the messages below (only when the format changes on purpose).

use palpa_protocol::*;
use std::path::{Path, PathBuf};

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// A small modal scene: two triangles over four vertices, two modes.
fn scene_modal() -> SceneInit {
    SceneInit {
        triangles: vec![[0, 1, 2], [0, 2, 3]],
        rest_positions: vec![
            [0.0, 0.0, 0.0],
            [0.1, 0.0, 0.0],
            [0.1, 0.1, 0.0],
            [0.0, 0.1, 0.0],
        ],
        modal_basis: Some(ModalBasis {
            mode_count: 2,
            vectors: vec![
                [0.0, 0.0, 0.5],
                [0.0, 0.0, -0.25],
                [0.0, 0.0, 1.0],
                [0.125, 0.0, 0.0],
                [0.0, 0.0, 0.75],
                [0.0, 0.0, 0.5],
                [0.0, 0.0, 0.25],
                [-0.125, 0.0, 0.0],
            ],
        }),
        up: [0.0, 0.0, 1.0],
        regions: vec![MaterialRegion {
            name: "lump".into(),
            young_pa: 240e3,
            triangles: vec![[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]],
            rest_positions: vec![
                [0.05, 0.05, -0.02],
                [0.06, 0.05, -0.02],
                [0.05, 0.06, -0.02],
                [0.05, 0.05, -0.01],
            ],
        }],
        column_capacity: 64,
    }
}

/// The unit of the example column and corrections: 2⁻²⁰ (exact in f32), m/N or m per
/// count.
const UNIT: f32 = 1.0 / 1_048_576.0;

/// The residual column of mesh node 17: vertices 1 and 2 move (512 counts of 2⁻²⁰ m/N
/// are 2⁻¹¹ ≈ 0.000488 m/N).
fn column_17() -> ResidualColumn {
    ResidualColumn {
        node: 17,
        unit: UNIT,
        entries: vec![
            ColumnEntry {
                vertex: 1,
                compliance: [0, 0, 0, 0, 0, 0, 0, 0, 512],
            },
            ColumnEntry {
                vertex: 2,
                compliance: [256, 0, 0, 0, 256, 0, 0, 0, 1024],
            },
        ],
    }
}

fn frame_modal() -> Frame {
    Frame {
        sequence: 42,
        scene_time: 1.25,
        sent_unix_us: 1_795_000_000_123_456,
        probe: [0.05, 0.05, -0.002],
        proxy: [0.05, 0.05, -0.0015],
        force: [0.0, 0.0, 1.5],
        in_contact: true,
        depth: 0.0005,
        normal: [0.0, 0.0, 1.0],
        // A stylus tilted 90° about z (its tool x along scene +y), button 1 down, the
        // gripper open 0.25 rad.
        stylus: Stylus {
            orientation: Some([0.0, 0.0, 0.707_106_77, 0.707_106_77]),
            buttons: 1,
            gripper: Some(0.25),
        },
        deformation: Deformation::Superposed {
            coordinates: vec![-0.002, 0.000_25],
            loads: vec![NodalLoad {
                node: 17,
                force: [0.5, 0.0, -1.5],
            }],
            correction_unit: UNIT,
            corrections: vec![VertexCorrection {
                vertex: 2,
                displacement: [0, 0, -512],
            }],
        },
    }
}

/// Every message variant at least once, with a file name.
fn messages() -> Vec<(&'static str, Message)> {
    vec![
        (
            "server_hello",
            Message::Server(ServerMessage::Hello(ServerHello {
                protocol_version: PROTOCOL_VERSION,
                scene_name: "block with lump".into(),
                frame_rate_hz: 30.0,
                model_rate_hz: 200.0,
                haptic_rate_hz: 1000.0,
                units: Units::si(),
                control_allowed: true,
            })),
        ),
        (
            "server_scene_init_modal",
            Message::Server(ServerMessage::SceneInit(scene_modal())),
        ),
        (
            "server_scene_init_positions",
            Message::Server(ServerMessage::SceneInit(SceneInit {
                triangles: vec![[0, 1, 2]],
                rest_positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
                modal_basis: None,
                up: [0.0, 1.0, 0.0],
                regions: vec![],
                column_capacity: 64,
            })),
        ),
        (
            "server_frame_modal",
            Message::Server(ServerMessage::Frame(frame_modal())),
        ),
        (
            "server_frame_positions",
            Message::Server(ServerMessage::Frame(Frame {
                sequence: 7,
                scene_time: 0.5,
                sent_unix_us: 0,
                probe: [0.0, 0.0, 0.25],
                proxy: [0.0, 0.0, 0.25],
                force: [0.0, 0.0, 0.0],
                in_contact: false,
                depth: 0.0,
                normal: [0.0, 0.0, 0.0],
                stylus: Stylus::NONE,
                deformation: Deformation::Positions {
                    positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, -0.0625]],
                },
            })),
        ),
        (
            "server_residual_column",
            Message::Server(ServerMessage::ResidualColumn(column_17())),
        ),
        (
            "server_forget_columns",
            Message::Server(ServerMessage::ForgetColumns(ForgetColumns {
                nodes: vec![17, 4],
            })),
        ),
        (
            "server_haptic_stats",
            Message::Server(ServerMessage::HapticStats(HapticStats {
                ticks: 1000,
                period_p50_s: 0.001,
                period_p99_s: 0.001_05,
                period_max_s: 0.0021,
                compute_p99_s: 0.000_012,
                missed_deadlines: 3,
                clamped_forces: 0,
            })),
        ),
        (
            "server_safety",
            Message::Server(ServerMessage::Safety(SafetyReport {
                devices: vec![
                    DeviceSafety {
                        device: 1,
                        time_s: 2.5,
                        state: SafetyReason::StalledModel,
                        counts: SafetyCounts {
                            ramping: 500,
                            stalled_model: 3,
                            clamped: 12,
                            ..SafetyCounts::default()
                        },
                        last_fade: Some(Fade {
                            reason: SafetyReason::StalledModel,
                            start_s: 2.498,
                            ticks: 3,
                            force_removed: 0.75,
                        }),
                        largest_fade: None,
                    },
                    DeviceSafety {
                        device: 2,
                        time_s: 2.5,
                        state: SafetyReason::Normal,
                        counts: SafetyCounts::default(),
                        last_fade: None,
                        largest_fade: None,
                    },
                ],
            })),
        ),
        (
            "server_notice",
            Message::Server(ServerMessage::Notice(Notice {
                kind: NoticeKind::RecordingEnded,
                message: "the recording in rec ended: the server stops".into(),
            })),
        ),
        (
            "server_error",
            Message::Server(ServerMessage::Error(ErrorMessage {
                code: ErrorCode::Unauthorized,
                message: "wrong control token".into(),
            })),
        ),
        (
            "server_control_status",
            Message::Server(ServerMessage::ControlStatus(ControlStatus {
                granted: false,
                message: "wrong control token: this viewer is read-only".into(),
            })),
        ),
        (
            "client_control_check",
            Message::Client(ClientMessage::Control(Control {
                token: "stale".into(),
                command: ControlCommand::CheckToken,
            })),
        ),
        (
            "client_control_move",
            Message::Client(ClientMessage::Control(Control {
                token: "0123abcd".into(),
                command: ControlCommand::MoveProbe {
                    position: [0.05, 0.05, -0.004],
                },
            })),
        ),
        (
            "client_control_release",
            Message::Client(ClientMessage::Control(Control {
                token: "0123abcd".into(),
                command: ControlCommand::ReleaseProbe,
            })),
        ),
        (
            "client_control_reset",
            Message::Client(ClientMessage::Control(Control {
                token: "".into(),
                command: ControlCommand::ResetTissue,
            })),
        ),
    ]
}

/// A vector is either direction; the file name prefix says which.
#[derive(Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
enum Message {
    Server(ServerMessage),
    Client(ClientMessage),
}

impl Message {
    fn encode(&self) -> Vec<u8> {
        match self {
            Message::Server(m) => encode_server(m),
            Message::Client(m) => encode_client(m),
        }
    }

    fn parse_json_like(&self, json: &str) -> Message {
        match self {
            Message::Server(_) => Message::Server(serde_json::from_str(json).expect("json")),
            Message::Client(_) => Message::Client(serde_json::from_str(json).expect("json")),
        }
    }

    fn decode_like(&self, bytes: &[u8]) -> Message {
        match self {
            Message::Server(_) => Message::Server(decode_server(bytes).expect("decode")),
            Message::Client(_) => Message::Client(decode_client(bytes).expect("decode")),
        }
    }
}

#[test]
fn vectors_decode_to_their_json_and_reencode_to_their_bytes() {
    let dir = vectors_dir();
    if std::env::var_os("PALPA_WRITE_VECTORS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, message) in messages() {
            std::fs::write(dir.join(format!("{name}.bin")), message.encode()).unwrap();
            let json = serde_json::to_string_pretty(&message).unwrap();
            std::fs::write(dir.join(format!("{name}.json")), json + "\n").unwrap();
        }
    }
    let mut checked = 0;
    for (name, message) in messages() {
        let bin = std::fs::read(dir.join(format!("{name}.bin")))
            .unwrap_or_else(|e| panic!("{name}.bin: {e}"));
        let json_text = std::fs::read_to_string(dir.join(format!("{name}.json")))
            .unwrap_or_else(|e| panic!("{name}.json: {e}"));
        let decoded = message.decode_like(&bin);
        assert_eq!(
            decoded,
            message.parse_json_like(&json_text),
            "{name}: decode != json"
        );
        assert_eq!(decoded, message, "{name}: decode != source message");
        assert_eq!(decoded.encode(), bin, "{name}: re-encode != bin");
        checked += 1;
    }
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        files,
        2 * checked,
        "every file in vectors/ has a message here"
    );
}

/// Hand-computed bytes of the smallest messages: the layout SPEC.md promises.
#[test]
fn spec_layout_of_control_messages() {
    let reset = encode_client(&ClientMessage::Control(Control {
        token: "ab".into(),
        command: ControlCommand::ResetTissue,
    }));
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0, 0, 0, 0,             // ClientMessage tag 0 = Control (u32 LE)
        2, 0, 0, 0, 0, 0, 0, 0, // token length (u64 LE)
        b'a', b'b',             // token UTF-8
        2, 0, 0, 0,             // ControlCommand tag 2 = ResetTissue
    ];
    assert_eq!(reset, expected);

    let moved = encode_client(&ClientMessage::Control(Control {
        token: String::new(),
        command: ControlCommand::MoveProbe {
            position: [1.0, -2.0, 0.5],
        },
    }));
    let mut expected = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    for x in [1.0f64, -2.0, 0.5] {
        expected.extend_from_slice(&x.to_le_bytes());
    }
    assert_eq!(moved, expected);
}

#[test]
fn reconstruction_matches_hand_computation() {
    let scene = scene_modal();
    let frame = frame_modal();
    let mut columns = ColumnCache::default();
    assert_eq!(
        reconstruct_positions(&scene, &columns, &frame),
        Err(ReconstructError::MissingColumn(17)),
        "a load without its column is refused, naming the node"
    );
    columns.insert(column_17());
    let p = reconstruct_positions(&scene, &columns, &frame).unwrap();
    // vertex 2: rest (0.1, 0.1, 0) + q0·(0, 0, 0.75) + q1·(0, 0, 0.5)
    //   + column (diag 256, 256, 1024 counts)·(0.5, 0, -1.5) + (0, 0, -512 counts)
    let z = -0.002f32 * 0.75 + 0.000_25 * 0.5 + 1024.0 * UNIT * -1.5 - 512.0 * UNIT;
    assert!((p[2][2] - z).abs() < 1e-9, "{} vs {z}", p[2][2]);
    assert!((p[2][0] - (0.1 + 256.0 * UNIT * 0.5)).abs() < 1e-9);
    // vertex 1: x gets q1·0.125, z gets q0·1.0 and the column's 512 counts·(-1.5)
    assert!((p[1][0] - (0.1 + 0.000_25 * 0.125)).abs() < 1e-9);
    assert!((p[1][2] - (-0.002 + 512.0 * UNIT * -1.5)).abs() < 1e-9);
    // vertex 0 is not in the column: modes only
    assert!((p[0][2] - (-0.002f32 * 0.5 + 0.000_25 * -0.25)).abs() < 1e-9);

    let mut bad = frame.clone();
    bad.deformation = Deformation::Superposed {
        coordinates: vec![0.0],
        loads: vec![],
        correction_unit: UNIT,
        corrections: vec![],
    };
    assert_eq!(
        reconstruct_positions(&scene, &columns, &bad),
        Err(ReconstructError::ModeCount {
            got: 1,
            expected: 2
        })
    );
    columns.forget(&ForgetColumns { nodes: vec![17] });
    assert!(columns.is_empty(), "forgetting drops the column");
    let mut outside = column_17();
    outside.entries[0].vertex = 4;
    columns.insert(outside);
    assert!(
        matches!(
            reconstruct_positions(&scene, &columns, &frame),
            Err(ReconstructError::VertexOutOfRange { vertex: 4, .. })
        ),
        "a column entry past the surface is refused"
    );
}

/// The sizes SPEC.md gives: a frame is 171 + 4k + 16l + 10c bytes (20 more with an
/// orientation and a gripper), a column 20 + 22e, a `ForgetColumns` 12 + 4m; and a
/// column's bytes field by field.
#[test]
fn spec_sizes_of_frames_and_columns() {
    let mut frame = frame_modal();
    assert_eq!(
        encode_server(&ServerMessage::Frame(frame.clone())).len(),
        171 + 20 + 4 * 2 + 16 + 10,
        "the example frame has an orientation and a gripper"
    );
    frame.stylus = Stylus::NONE;
    for (k, l, c) in [(0, 0, 0), (40, 0, 0), (40, 17, 3), (2, 1, 1)] {
        frame.deformation = Deformation::Superposed {
            coordinates: vec![0.5; k],
            loads: vec![
                NodalLoad {
                    node: 1,
                    force: [0.0; 3]
                };
                l
            ],
            correction_unit: UNIT,
            corrections: vec![
                VertexCorrection {
                    vertex: 0,
                    displacement: [0; 3]
                };
                c
            ],
        };
        let bytes = encode_server(&ServerMessage::Frame(frame.clone()));
        assert_eq!(
            bytes.len(),
            171 + 4 * k + 16 * l + 10 * c,
            "k {k} l {l} c {c}"
        );
    }
    let column = encode_server(&ServerMessage::ResidualColumn(column_17()));
    assert_eq!(column.len(), 20 + 22 * 2);
    let mut expected = vec![6, 0, 0, 0, 17, 0, 0, 0];
    expected.extend_from_slice(&UNIT.to_le_bytes());
    expected.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]);
    for entry in column_17().entries {
        expected.extend_from_slice(&entry.vertex.to_le_bytes());
        for x in entry.compliance {
            expected.extend_from_slice(&x.to_le_bytes());
        }
    }
    assert_eq!(column, expected);
    let forget = encode_server(&ServerMessage::ForgetColumns(ForgetColumns {
        nodes: vec![17, 4],
    }));
    assert_eq!(
        forget,
        [7, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 4, 0, 0, 0]
    );
}
