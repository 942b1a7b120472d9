//! Haptic runtime: the 1 kHz haptic thread, the 200 Hz model thread, hand-offs, safety.
