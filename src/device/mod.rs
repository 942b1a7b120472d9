//! Haptic devices: the `HapticDevice` trait and its hid, sim, replay and record backends.
