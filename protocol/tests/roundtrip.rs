//! Property tests: every message survives encode → decode unchanged, and decoding
//! arbitrary or truncated bytes returns an error instead of panicking.

use palpa_protocol::*;
use proptest::collection::vec;
use proptest::prelude::*;

fn v3f32() -> impl Strategy<Value = [f32; 3]> {
    [-1e3f32..1e3, -1e3f32..1e3, -1e3f32..1e3]
}

fn v3f64() -> impl Strategy<Value = [f64; 3]> {
    [any::<f64>(), any::<f64>(), any::<f64>()]
        .prop_map(|v| v.map(|x| if x.is_nan() { 0.0 } else { x }))
}

fn deformation() -> impl Strategy<Value = Deformation> {
    prop_oneof![
        (
            vec(-1.0f32..1.0, 0..64),
            vec((any::<u32>(), v3f32()), 0..16),
            1e-9f32..1e-3,
            vec((any::<u32>(), any::<[i16; 3]>()), 0..16)
        )
            .prop_map(|(q, l, correction_unit, c)| {
                Deformation::Superposed {
                    coordinates: q,
                    loads: l
                        .into_iter()
                        .map(|(node, force)| NodalLoad { node, force })
                        .collect(),
                    correction_unit,
                    corrections: c
                        .into_iter()
                        .map(|(vertex, displacement)| VertexCorrection {
                            vertex,
                            displacement,
                        })
                        .collect(),
                }
            }),
        vec(v3f32(), 0..64).prop_map(|positions| Deformation::Positions { positions }),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    (
        any::<u64>(),
        any::<f64>(),
        any::<u64>(),
        v3f64(),
        v3f64(),
        v3f64(),
        (any::<bool>(), 0.0f64..0.1, v3f64()),
        (
            proptest::option::of([-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0]),
            any::<u32>(),
            proptest::option::of(-4.0f32..4.0),
        ),
        deformation(),
    )
        .prop_map(
            |(
                sequence,
                t,
                us,
                probe,
                proxy,
                force,
                (in_contact, depth, normal),
                (orientation, buttons, gripper),
                deformation,
            )| {
                Frame {
                    sequence,
                    scene_time: if t.is_nan() { 0.0 } else { t },
                    sent_unix_us: us,
                    probe,
                    proxy,
                    force,
                    in_contact,
                    depth,
                    normal,
                    stylus: Stylus {
                        orientation,
                        buttons,
                        gripper,
                    },
                    deformation,
                }
            },
        )
}

fn server_message() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![
        (any::<u32>(), ".{0,40}", any::<bool>(), 0.0f32..1e4).prop_map(|(v, name, c, r)| {
            ServerMessage::Hello(ServerHello {
                protocol_version: v,
                scene_name: name,
                frame_rate_hz: r,
                model_rate_hz: r * 2.0,
                haptic_rate_hz: r * 3.0,
                units: Units::si(),
                control_allowed: c,
            })
        }),
        (
            vec([any::<u32>(); 3].prop_map(|t| t), 0..32),
            vec(v3f32(), 0..32),
            proptest::option::of((0u32..4, vec(v3f32(), 0..32))),
            v3f32(),
            vec(
                (
                    ".{0,20}",
                    0.0f32..1e7,
                    vec([any::<u32>(); 3].prop_map(|t| t), 0..8),
                    vec(v3f32(), 0..8)
                ),
                0..3
            )
        )
            .prop_map(|(triangles, rest_positions, basis, up, regions)| {
                ServerMessage::SceneInit(SceneInit {
                    triangles,
                    rest_positions,
                    modal_basis: basis.map(|(mode_count, vectors)| ModalBasis {
                        mode_count,
                        vectors,
                    }),
                    up,
                    regions: regions
                        .into_iter()
                        .map(
                            |(name, young_pa, triangles, rest_positions)| MaterialRegion {
                                name,
                                young_pa,
                                triangles,
                                rest_positions,
                            },
                        )
                        .collect(),
                    column_capacity: 64,
                })
            }),
        (
            any::<u32>(),
            1e-12f32..1e-3,
            vec((any::<u32>(), any::<[i16; 9]>()), 0..16)
        )
            .prop_map(|(node, unit, entries)| {
                ServerMessage::ResidualColumn(ResidualColumn {
                    node,
                    unit,
                    entries: entries
                        .into_iter()
                        .map(|(vertex, compliance)| ColumnEntry { vertex, compliance })
                        .collect(),
                })
            }),
        vec(any::<u32>(), 0..16)
            .prop_map(|nodes| ServerMessage::ForgetColumns(ForgetColumns { nodes })),
        (any::<bool>(), ".{0,80}").prop_map(|(granted, message)| {
            ServerMessage::ControlStatus(ControlStatus { granted, message })
        }),
        frame().prop_map(ServerMessage::Frame),
        (any::<u64>(), 0.0f64..1.0, any::<u64>()).prop_map(|(ticks, p, missed)| {
            ServerMessage::HapticStats(HapticStats {
                ticks,
                period_p50_s: p,
                period_p99_s: p * 2.0,
                period_max_s: p * 3.0,
                compute_p99_s: p / 10.0,
                missed_deadlines: missed,
                clamped_forces: missed / 2,
            })
        }),
        (0usize..7, ".{0,80}").prop_map(|(code, message)| {
            let code = [
                ErrorCode::Malformed,
                ErrorCode::TooLarge,
                ErrorCode::Unauthorized,
                ErrorCode::ServerFull,
                ErrorCode::IdleTimeout,
                ErrorCode::UnexpectedText,
                ErrorCode::ShuttingDown,
            ][code];
            ServerMessage::Error(ErrorMessage { code, message })
        }),
    ]
}

fn client_message() -> impl Strategy<Value = ClientMessage> {
    let command = prop_oneof![
        v3f64().prop_map(|position| ControlCommand::MoveProbe { position }),
        Just(ControlCommand::ReleaseProbe),
        Just(ControlCommand::ResetTissue),
        Just(ControlCommand::CheckToken),
    ];
    ("[a-f0-9]{0,64}", command)
        .prop_map(|(token, command)| ClientMessage::Control(Control { token, command }))
}

proptest! {
    #[test]
    fn server_messages_round_trip(m in server_message()) {
        let bytes = encode_server(&m);
        prop_assert_eq!(decode_server(&bytes).unwrap(), m);
    }

    #[test]
    fn client_messages_round_trip(m in client_message()) {
        let bytes = encode_client(&m);
        prop_assert!(bytes.len() <= MAX_CLIENT_MESSAGE_BYTES);
        prop_assert_eq!(decode_client(&bytes).unwrap(), m);
    }

    #[test]
    fn truncated_or_extended_messages_are_errors(m in server_message(), cut in any::<prop::sample::Index>()) {
        let bytes = encode_server(&m);
        let n = cut.index(bytes.len());
        prop_assert!(decode_server(&bytes[..n]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert!(decode_server(&longer).is_err());
    }

    /// Counts of the unit chosen for the largest magnitude stay within an i16 and come
    /// back to within half a unit (plus f32 rounding of the unit).
    #[test]
    fn quantised_values_come_back_within_half_a_count(
        max in 1e-12f64..1.0,
        fractions in vec(-1.0f64..=1.0, 1..32),
    ) {
        let unit = quantum_for(max);
        for x in fractions.iter().map(|f| f * max).chain([max, -max]) {
            let count = quantise(x, unit);
            let back = count as f64 * unit as f64;
            prop_assert!((back - x).abs() <= 0.5 * unit as f64 * (1.0 + 1e-6),
                "{x} → {count} counts of {unit} → {back}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        let _ = decode_server(&bytes);
        let _ = decode_client(&bytes);
    }
}

#[test]
fn huge_claimed_length_is_an_error_not_an_allocation() {
    // ClientMessage::Control whose token claims 2^60 bytes.
    let mut bytes = vec![0u8, 0, 0, 0];
    bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(decode_client(&bytes).is_err());
    let mut server = vec![2u8, 0, 0, 0];
    server.extend_from_slice(&[0u8; 80]);
    server.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(decode_server(&server).is_err());
}

#[test]
fn oversized_client_message_is_too_large() {
    let bytes = vec![0u8; MAX_CLIENT_MESSAGE_BYTES + 1];
    assert!(matches!(
        decode_client(&bytes),
        Err(DecodeError::TooLarge { .. })
    ));
}
