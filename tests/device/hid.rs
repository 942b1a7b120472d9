//! HID profiles through the in-memory transport (the same `ReportTransport` trait hidapi
//! sits behind): decoding, force encoding with clamping, sequence gaps, unplug and
//! reconnect, profile errors that name the key.

use palpa::device::hid::{HidDevice, MemoryPeer, MemoryTransport, MAX_REPORT_LEN};
use palpa::device::profile::DeviceProfile;
use palpa::device::{DeviceError, HapticDevice};
use palpa::Vec3;

fn reference_device() -> (HidDevice<MemoryTransport>, MemoryPeer, DeviceProfile) {
    let (transport, peer) = MemoryTransport::pair(64);
    let profile = DeviceProfile::reference();
    (HidDevice::new(transport, profile.clone()), peer, profile)
}

/// Builds a reference input report by hand, byte by byte as docs/device-protocol.md
/// specifies it (independent of the profile code).
fn reference_input(seq: u16, time_us: u32, pos_um: [i32; 3], buttons: u8) -> Vec<u8> {
    let mut r = vec![0x01];
    r.extend_from_slice(&seq.to_le_bytes());
    r.extend_from_slice(&time_us.to_le_bytes());
    for p in pos_um {
        r.extend_from_slice(&p.to_le_bytes());
    }
    r.push(buttons);
    assert_eq!(r.len(), 20);
    r
}

#[test]
fn decodes_position_buttons_and_time_of_the_reference_report() {
    let (mut dev, peer, _) = reference_device();
    peer.send(&reference_input(
        7,
        1_500_000,
        [12_345, -6_789, -40_000],
        0b10,
    ));
    let s = dev.read(0.0).unwrap();
    assert!((s.position - Vec3::new(0.012345, -0.006789, -0.040)).norm() < 1e-12);
    assert_eq!(s.buttons, 0b10);
    assert_eq!(s.sequence, 1);
    // Time is relative to the first report and unwraps across the u32 wrap.
    peer.send(&reference_input(8, u32::MAX - 99, [0, 0, 0], 0));
    peer.send(&reference_input(9, 900, [0, 0, 0], 1));
    let s = dev.read(0.0).unwrap();
    let expected = (u32::MAX as f64 - 99.0 - 1_500_000.0 + 1000.0) * 1e-6;
    assert!((s.device_time - expected).abs() < 1e-9, "{}", s.device_time);
    assert_eq!(s.buttons, 1);
}

#[test]
fn drains_the_queue_and_uses_the_newest_report() {
    let (mut dev, peer, _) = reference_device();
    for i in 0..10 {
        peer.send(&reference_input(i, i as u32 * 1000, [i as i32, 0, 0], 0));
    }
    let s = dev.read(0.0).unwrap();
    assert!((s.position.x - 9e-6).abs() < 1e-15);
    assert_eq!(s.sequence, 10);
    assert_eq!(dev.counters().reports, 10);
    assert_eq!(dev.counters().lost, 0);
    // Nothing new: the same sample (same sequence) comes back.
    assert_eq!(dev.read(0.0).unwrap().sequence, 10);
}

#[test]
fn detects_sequence_gaps_including_across_the_wrap() {
    let (mut dev, peer, _) = reference_device();
    peer.send(&reference_input(65_533, 0, [0; 3], 0));
    dev.read(0.0).unwrap();
    peer.send(&reference_input(65_534, 0, [0; 3], 0));
    // 65535, 0, 1 lost.
    peer.send(&reference_input(2, 0, [0; 3], 0));
    let s = dev.read(0.0).unwrap();
    assert_eq!(dev.counters().lost, 3);
    assert_eq!(
        s.sequence,
        1 + 1 + 4,
        "sequence counts device reports, lost ones included"
    );
}

#[test]
fn ignores_foreign_and_short_reports() {
    let (mut dev, peer, _) = reference_device();
    peer.send(&reference_input(1, 0, [5, 0, 0], 0));
    let mut foreign = reference_input(2, 0, [99, 0, 0], 0);
    foreign[0] = 0x05;
    peer.send(&foreign);
    peer.send(&reference_input(3, 0, [99, 0, 0], 0)[..10]);
    let s = dev.read(0.0).unwrap();
    assert!((s.position.x - 5e-6).abs() < 1e-15);
    assert_eq!(dev.counters().foreign, 1);
    assert_eq!(dev.counters().short, 1);
}

#[test]
fn encodes_force_in_millinewtons_with_heartbeat() {
    let (mut dev, peer, _) = reference_device();
    dev.write_force(Vec3::new(1.5, -0.25, 0.0004)).unwrap();
    dev.write_force(Vec3::new(1.5, -0.25, 0.0006)).unwrap();
    let mut buf = [0u8; MAX_REPORT_LEN];
    let n = peer.receive(&mut buf).unwrap();
    assert_eq!(n, 9);
    assert_eq!(&buf[..9], &[0x02, 1, 0, 0xDC, 0x05, 0x06, 0xFF, 0, 0]);
    peer.receive(&mut buf).unwrap();
    assert_eq!(
        u16::from_le_bytes([buf[1], buf[2]]),
        2,
        "heartbeat increments"
    );
    assert_eq!(
        i16::from_le_bytes([buf[7], buf[8]]),
        1,
        "0.6 mN rounds to 1 count"
    );
}

#[test]
fn force_is_clamped_to_the_rated_force_and_never_non_finite() {
    let (mut dev, peer, profile) = reference_device();
    let mut buf = [0u8; MAX_REPORT_LEN];
    dev.write_force(Vec3::new(0.0, 30.0, -40.0)).unwrap();
    peer.receive(&mut buf).unwrap();
    let f = Vec3::from(profile.codec().decode_output(&buf).0);
    assert!(
        (f.norm() - 8.0).abs() < 2e-3,
        "clamped to the rated 8 N: {f:?}"
    );
    assert!(
        (f.normalize() - Vec3::new(0.0, 0.6, -0.8)).norm() < 1e-3,
        "direction kept"
    );
    dev.write_force(Vec3::new(f64::NAN, 1.0, 0.0)).unwrap();
    peer.receive(&mut buf).unwrap();
    assert_eq!(profile.codec().decode_output(&buf).0, [0.0; 3]);
}

#[test]
fn field_encoding_saturates_the_integer_range() {
    // A profile with a tiny force range: 0.01 N per count in an i8 (±1.27 N). With the
    // reference's rated 8 N the field would saturate below the rated force (and turn the
    // force), so the profile is refused naming the field; rated at 1.2 N it is valid.
    let text = palpa::device::profile::REFERENCE_PROFILE_TOML.replace(
        "x = { offset = 3, type = \"i16\", scale = 1e-3 }",
        "x = { offset = 3, type = \"i8\", scale = 0.01 }",
    );
    let e = DeviceProfile::from_toml(&text, "test.toml").unwrap_err();
    assert!(
        e.to_string()
            .contains("output.force.x: rating.max_force = 8"),
        "{e}"
    );
    let text = text.replace("max_force = 8.0", "max_force = 1.2");
    let profile = DeviceProfile::from_toml(&text, "test.toml").unwrap();
    let mut buf = [0u8; MAX_REPORT_LEN];
    let mut codec = profile.codec();
    let (_, saturated) = codec.encode_output(&mut buf, Vec3::new(-5.0, 0.0, 0.0), 0);
    assert!(saturated);
    assert_eq!(buf[3] as i8, -128);
    let (_, saturated) = codec.encode_output(&mut buf, Vec3::new(1.0, 0.0, 0.0), 0);
    assert!(!saturated);
    assert_eq!(buf[3] as i8, 100);
}

#[test]
fn axis_mapping_is_applied_both_ways() {
    let text = palpa::device::profile::REFERENCE_PROFILE_TOML
        .replace("y = \"+y\"", "y = \"-z\"")
        .replace("z = \"+z\"", "z = \"+y\"");
    let profile = DeviceProfile::from_toml(&text, "test.toml").unwrap();
    let (transport, peer) = MemoryTransport::pair(8);
    let mut dev = HidDevice::new(transport, profile.clone());
    peer.send(&reference_input(1, 0, [1, 2, 3], 0));
    let s = dev.read(0.0).unwrap();
    assert!((s.position - Vec3::new(1e-6, -3e-6, 2e-6)).norm() < 1e-15);
    dev.write_force(Vec3::new(0.001, 0.002, 0.003)).unwrap();
    let mut buf = [0u8; MAX_REPORT_LEN];
    peer.receive(&mut buf).unwrap();
    let raw = |o: usize| i16::from_le_bytes([buf[o], buf[o + 1]]);
    assert_eq!((raw(3), raw(5), raw(7)), (1, 3, -2));
}

#[test]
fn unplug_reports_disconnect_and_reconnect_restores() {
    let (mut dev, peer, _) = reference_device();
    peer.send(&reference_input(1, 0, [0; 3], 0));
    dev.read(0.0).unwrap();
    peer.set_plugged(false);
    assert!(matches!(dev.read(0.0), Err(DeviceError::Disconnected(_))));
    assert!(dev.write_force(Vec3::zeros()).is_err());
    assert!(!dev.reconnect().unwrap());
    peer.set_plugged(true);
    assert!(dev.reconnect().unwrap());
    // Reconnecting commands zero force first.
    let mut buf = [0u8; MAX_REPORT_LEN];
    peer.receive_newest(&mut buf).unwrap();
    assert_eq!(&buf[3..9], &[0; 6]);
    peer.send(&reference_input(500, 0, [7, 0, 0], 0));
    assert!((dev.read(0.0).unwrap().position.x - 7e-6).abs() < 1e-15);
    assert_eq!(dev.counters().disconnects, 1);
    assert_eq!(dev.counters().lost, 0, "no gap counted across a reconnect");
}

#[test]
fn profile_errors_name_the_file_and_key() {
    let bad_key = palpa::device::profile::REFERENCE_PROFILE_TOML
        .replace("max_force = 8.0", "max_force = 8.0\nmax_forse = 9.0");
    let e = DeviceProfile::from_toml(&bad_key, "dev.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("dev.toml") && e.contains("max_forse"), "{e}");

    let past_end = palpa::device::profile::REFERENCE_PROFILE_TOML
        .replace("buttons = { offset = 19", "buttons = { offset = 20");
    let e = DeviceProfile::from_toml(&past_end, "dev.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("input.buttons") && e.contains("report length 20"),
        "{e}"
    );

    let bad_axis =
        palpa::device::profile::REFERENCE_PROFILE_TOML.replace("z = \"+z\"", "z = \"+x\"");
    let e = DeviceProfile::from_toml(&bad_axis, "dev.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("axes.z"), "{e}");

    let bad_type = palpa::device::profile::REFERENCE_PROFILE_TOML.replace(
        "sequence = { offset = 1, type = \"u16\" }",
        "sequence = { offset = 1, type = \"u24\" }",
    );
    let e = DeviceProfile::from_toml(&bad_type, "dev.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("u24"), "{e}");
}

/// The HID report descriptor published in docs/device-protocol.md, parsed with a minimal
/// HID item parser: its report sizes must equal the reference profile's report lengths.
#[test]
fn documented_report_descriptor_matches_the_reference_profile() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/device-protocol.md"
    ))
    .unwrap();
    let block = doc
        .split("```hid-descriptor")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("docs/device-protocol.md has a ```hid-descriptor block");
    let bytes: Vec<u8> = block
        .lines()
        .filter_map(|l| l.split("//").next())
        .flat_map(|l| {
            l.split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    // Walk the short items: track report id, size, count; sum bits per (id, main item).
    let (mut id, mut size, mut count) = (0u32, 0u32, 0u32);
    let mut input_bits = std::collections::BTreeMap::new();
    let mut output_bits = std::collections::BTreeMap::new();
    let mut i = 0;
    while i < bytes.len() {
        let prefix = bytes[i];
        let len = [0, 1, 2, 4][(prefix & 3) as usize];
        let mut value = 0u32;
        for k in 0..len {
            value |= (bytes[i + 1 + k] as u32) << (8 * k);
        }
        match prefix & 0xFC {
            0x84 => id = value,
            0x74 => size = value,
            0x94 => count = value,
            0x80 => *input_bits.entry(id).or_insert(0) += size * count,
            0x90 => *output_bits.entry(id).or_insert(0) += size * count,
            _ => {}
        }
        i += 1 + len;
    }
    let p = DeviceProfile::reference();
    // Descriptor sizes exclude the report id byte; hidapi buffers include it.
    assert_eq!(
        input_bits[&(p.input.report_id as u32)] / 8 + 1,
        p.input.length as u32
    );
    assert_eq!(
        output_bits[&(p.output.report_id as u32)] / 8 + 1,
        p.output.length as u32
    );
}

/// Issue input: an offset of 18446744073709551615 (`usize::MAX`) passed validation because
/// offset + size wrapped around; offset 20 was rejected.
#[test]
fn huge_field_offsets_are_rejected_naming_the_key() {
    for offset in [
        "18446744073709551615",
        "18446744073709551614",
        "9223372036854775807",
    ] {
        let huge = palpa::device::profile::REFERENCE_PROFILE_TOML.replace(
            "buttons = { offset = 19",
            &format!("buttons = {{ offset = {offset}"),
        );
        let e = DeviceProfile::from_toml(&huge, "dev.toml")
            .expect_err(offset)
            .to_string();
        assert!(
            e.starts_with("dev.toml: ")
                && e.contains("input.buttons.offset")
                && e.contains("runs past the report length 20"),
            "{offset}: {e}"
        );
    }
}
