// palpa wire protocol (protocol/SPEC.md) in plain JavaScript: decode server messages,
// encode and decode client messages. No dependencies; runs in browsers and in Node.
//
// Decoded objects have the shape of the Rust types' serde JSON (the files in
// protocol/vectors/*.json): {Frame: {sequence, ..., deformation: {Superposed: {...}}}}.
// Bulk arrays are typed arrays for speed: Vec<[f32; 3]> becomes a flat Float32Array of
// 3·n values, Vec<[u32; 3]> a flat Uint32Array, Vec<f32> a Float32Array.

export const PROTOCOL_VERSION = 6;
export const MAX_SERVER_MESSAGE_BYTES = 64 * 1024 * 1024;
export const MAX_CLIENT_MESSAGE_BYTES = 4096;

const SERVER_TAGS = [
  "Hello", "SceneInit", "Frame", "HapticStats", "Error", "ControlStatus", "ResidualColumn",
  "ForgetColumns", "Safety", "Notice",
];
const SAFETY_REASONS = [
  "Normal", "Ramping", "StaleSample", "StalledModel", "DeviceFault", "NotFinite", "Clamped",
  "RateLimited",
];
const NOTICE_KINDS = ["RecordingEnded", "RecordingFailed"];
const ERROR_CODES = [
  "Malformed", "TooLarge", "Unauthorized", "ServerFull", "IdleTimeout", "UnexpectedText",
  "ShuttingDown",
];
const COMMANDS = ["MoveProbe", "ReleaseProbe", "ResetTissue", "CheckToken"];

/** Thrown for bytes that are not a valid message; `message` says what and where. */
export class DecodeError extends Error {}

class Reader {
  constructor(bytes) {
    const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    this.u8 = u8;
    this.view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
    this.pos = 0;
  }
  need(n, what) {
    if (this.pos + n > this.u8.length) {
      throw new DecodeError(`truncated: ${what} needs ${n} bytes at offset ${this.pos}, ` +
        `message has ${this.u8.length}`);
    }
  }
  u8v(what) { this.need(1, what); return this.u8[this.pos++]; }
  bool(what) {
    const b = this.u8v(what);
    if (b > 1) throw new DecodeError(`${what}: bool byte ${b} at offset ${this.pos - 1}`);
    return b === 1;
  }
  u32(what) { this.need(4, what); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  u64(what) {
    this.need(8, what);
    const lo = this.view.getUint32(this.pos, true);
    const hi = this.view.getUint32(this.pos + 4, true);
    if (hi > 0x1fffff) throw new DecodeError(`${what}: u64 at offset ${this.pos} exceeds 2^53`);
    this.pos += 8;
    return hi * 4294967296 + lo;
  }
  f32(what) { this.need(4, what); const v = this.view.getFloat32(this.pos, true); this.pos += 4; return v; }
  f64(what) { this.need(8, what); const v = this.view.getFloat64(this.pos, true); this.pos += 8; return v; }
  len(what, elementBytes) {
    const n = this.u64(`${what} length`);
    if (n * elementBytes > this.u8.length - this.pos) {
      throw new DecodeError(`${what}: length ${n} at offset ${this.pos - 8} exceeds the message`);
    }
    return n;
  }
  tag(what, names) {
    const t = this.u32(`${what} tag`);
    if (t >= names.length) throw new DecodeError(`${what}: unknown tag ${t} at offset ${this.pos - 4}`);
    return names[t];
  }
  string(what) {
    const n = this.len(what, 1);
    const s = new TextDecoder("utf-8", { fatal: true }).decode(this.u8.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
  vec3f64(what) { return [this.f64(what), this.f64(what), this.f64(what)]; }
  f32array(what, count) {
    this.need(4 * count, what);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = this.view.getFloat32(this.pos + 4 * i, true);
    this.pos += 4 * count;
    return out;
  }
  i16array(what, count) {
    this.need(2 * count, what);
    const out = new Int16Array(count);
    for (let i = 0; i < count; i++) out[i] = this.view.getInt16(this.pos + 2 * i, true);
    this.pos += 2 * count;
    return out;
  }
  vecF32(what) { return this.f32array(what, this.len(what, 4)); }
  vecVec3F32(what) { return this.f32array(what, 3 * this.len(what, 12)); }
  vecTriangles(what) {
    const n = this.len(what, 12);
    const out = new Uint32Array(3 * n);
    for (let i = 0; i < 3 * n; i++) out[i] = this.view.getUint32(this.pos + 4 * i, true);
    this.pos += 12 * n;
    return out;
  }
}

function readHello(r) {
  return {
    protocol_version: r.u32("protocol_version"),
    scene_name: r.string("scene_name"),
    frame_rate_hz: r.f32("frame_rate_hz"),
    model_rate_hz: r.f32("model_rate_hz"),
    haptic_rate_hz: r.f32("haptic_rate_hz"),
    units: { length: r.string("units.length"), force: r.string("units.force"), time: r.string("units.time") },
    control_allowed: r.bool("control_allowed"),
  };
}

function readSceneInit(r) {
  const triangles = r.vecTriangles("triangles");
  const rest_positions = r.vecVec3F32("rest_positions");
  const hasBasis = r.u8v("modal_basis option");
  let modal_basis = null;
  if (hasBasis === 1) {
    modal_basis = { mode_count: r.u32("mode_count"), vectors: r.vecVec3F32("modal_basis.vectors") };
  } else if (hasBasis !== 0) {
    throw new DecodeError(`modal_basis: option byte ${hasBasis} at offset ${r.pos - 1}`);
  }
  const up = [r.f32("up"), r.f32("up"), r.f32("up")];
  const regionCount = r.len("regions", 8 + 4 + 8 + 8);
  const regions = [];
  for (let i = 0; i < regionCount; i++) {
    regions.push({
      name: r.string("region.name"),
      young_pa: r.f32("region.young_pa"),
      triangles: r.vecTriangles("region.triangles"),
      rest_positions: r.vecVec3F32("region.rest_positions"),
    });
  }
  const column_capacity = r.u32("column_capacity");
  return { triangles, rest_positions, modal_basis, up, regions, column_capacity };
}

function readFrame(r) {
  const frame = {
    sequence: r.u64("sequence"),
    scene_time: r.f64("scene_time"),
    sent_unix_us: r.u64("sent_unix_us"),
    probe: r.vec3f64("probe"),
    proxy: r.vec3f64("proxy"),
    force: r.vec3f64("force"),
    in_contact: r.bool("in_contact"),
    depth: r.f64("depth"),
    normal: r.vec3f64("normal"),
    stylus: readStylus(r),
  };
  const kind = r.tag("deformation", ["Superposed", "Positions"]);
  if (kind === "Superposed") {
    const coordinates = r.vecF32("coordinates");
    const loadCount = r.len("loads", 16);
    const loads = [];
    for (let i = 0; i < loadCount; i++) {
      loads.push({ node: r.u32("load.node"), force: [r.f32("load.force"), r.f32("load.force"), r.f32("load.force")] });
    }
    const correction_unit = r.f32("correction_unit");
    const n = r.len("corrections", 10);
    const corrections = [];
    for (let i = 0; i < n; i++) {
      corrections.push({
        vertex: r.u32("correction.vertex"),
        displacement: Array.from(r.i16array("correction", 3)),
      });
    }
    frame.deformation = { Superposed: { coordinates, loads, correction_unit, corrections } };
  } else {
    frame.deformation = { Positions: { positions: r.vecVec3F32("positions") } };
  }
  return frame;
}

// Option<T>: a 0 or 1 byte, then T when 1.
function option(r, what, read) {
  const tag = r.u8v(`${what} option`);
  if (tag === 0) return null;
  if (tag !== 1) throw new DecodeError(`${what}: option byte ${tag} at offset ${r.pos - 1}`);
  return read();
}

function readStylus(r) {
  const orientation = option(r, "stylus.orientation",
    () => [0, 1, 2, 3].map(() => r.f32("stylus.orientation")));
  const buttons = r.u32("stylus.buttons");
  const gripper = option(r, "stylus.gripper", () => r.f32("stylus.gripper"));
  return { orientation, buttons, gripper };
}

function readColumn(r) {
  const node = r.u32("column.node");
  const unit = r.f32("column.unit");
  const n = r.len("column.entries", 22);
  const entries = [];
  for (let i = 0; i < n; i++) {
    entries.push({ vertex: r.u32("column.vertex"), compliance: r.i16array("column.compliance", 9) });
  }
  return { node, unit, entries };
}

function readForget(r) {
  const n = r.len("forget.nodes", 4);
  const nodes = [];
  for (let i = 0; i < n; i++) nodes.push(r.u32("forget.node"));
  return { nodes };
}

function readStats(r) {
  return {
    ticks: r.u64("ticks"),
    period_p50_s: r.f64("period_p50_s"),
    period_p99_s: r.f64("period_p99_s"),
    period_max_s: r.f64("period_max_s"),
    compute_p99_s: r.f64("compute_p99_s"),
    missed_deadlines: r.u64("missed_deadlines"),
    clamped_forces: r.u64("clamped_forces"),
  };
}

function readFade(r) {
  return {
    reason: r.tag("fade.reason", SAFETY_REASONS),
    start_s: r.f64("fade.start_s"),
    ticks: r.u64("fade.ticks"),
    force_removed: r.f64("fade.force_removed"),
  };
}

function readSafety(r) {
  const n = r.len("safety.devices", 8);
  const devices = [];
  for (let i = 0; i < n; i++) {
    const device = r.u32("device");
    const time_s = r.f64("time_s");
    const state = r.tag("state", SAFETY_REASONS);
    const counts = {};
    for (const key of ["ramping", "stale_sample", "stalled_model", "device_fault", "not_finite",
      "clamped", "rate_limited"]) counts[key] = r.u64(`counts.${key}`);
    const last_fade = option(r, "last_fade", () => readFade(r));
    const largest_fade = option(r, "largest_fade", () => readFade(r));
    devices.push({ device, time_s, state, counts, last_fade, largest_fade });
  }
  return { devices };
}

function finish(r, value) {
  if (r.pos !== r.u8.length) {
    throw new DecodeError(`${r.u8.length - r.pos} trailing bytes after a ${r.pos}-byte message`);
  }
  return value;
}

/** Decodes one server → client message (ArrayBuffer or Uint8Array). */
export function decodeServerMessage(bytes) {
  const r = new Reader(bytes);
  if (r.u8.length > MAX_SERVER_MESSAGE_BYTES) throw new DecodeError("message too large");
  const tag = r.tag("ServerMessage", SERVER_TAGS);
  switch (tag) {
    case "Hello": return finish(r, { Hello: readHello(r) });
    case "SceneInit": return finish(r, { SceneInit: readSceneInit(r) });
    case "Frame": return finish(r, { Frame: readFrame(r) });
    case "HapticStats": return finish(r, { HapticStats: readStats(r) });
    case "ResidualColumn": return finish(r, { ResidualColumn: readColumn(r) });
    case "ForgetColumns": return finish(r, { ForgetColumns: readForget(r) });
    case "Safety": return finish(r, { Safety: readSafety(r) });
    case "Notice": {
      const kind = r.tag("notice.kind", NOTICE_KINDS);
      return finish(r, { Notice: { kind, message: r.string("notice.message") } });
    }
    case "ControlStatus": {
      const granted = r.bool("granted");
      return finish(r, { ControlStatus: { granted, message: r.string("message") } });
    }
    default: {
      const code = r.tag("ErrorCode", ERROR_CODES);
      return finish(r, { Error: { code, message: r.string("message") } });
    }
  }
}

/** Decodes one client → server message (used by tests; the server decodes in Rust). */
export function decodeClientMessage(bytes) {
  const r = new Reader(bytes);
  r.tag("ClientMessage", ["Control"]);
  const token = r.string("token");
  const name = r.tag("ControlCommand", COMMANDS);
  const command = name === "MoveProbe" ? { MoveProbe: { position: r.vec3f64("position") } } : name;
  return finish(r, { Control: { token, command } });
}

/**
 * Encodes a client → server message given in the JSON shape, e.g.
 * {Control: {token, command: {MoveProbe: {position: [x, y, z]}}}} or
 * {Control: {token, command: "ResetTissue"}} (or "ReleaseProbe", "CheckToken").
 */
export function encodeClientMessage(message) {
  const { token, command } = message.Control;
  const tokenBytes = new TextEncoder().encode(token);
  const name = typeof command === "string" ? command : Object.keys(command)[0];
  const tag = COMMANDS.indexOf(name);
  if (tag < 0) throw new Error(`unknown control command ${name}`);
  const size = 4 + 8 + tokenBytes.length + 4 + (name === "MoveProbe" ? 24 : 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0, true);
  view.setUint32(4, tokenBytes.length, true);
  view.setUint32(8, 0, true);
  out.set(tokenBytes, 12);
  let pos = 12 + tokenBytes.length;
  view.setUint32(pos, tag, true);
  pos += 4;
  if (name === "MoveProbe") {
    for (const x of command.MoveProbe.position) { view.setFloat64(pos, x, true); pos += 8; }
  }
  return out;
}

/**
 * The residual columns a client holds, by mesh node id: `ResidualColumn` messages add
 * one, `ForgetColumns` drop some. Kept flat: vertex indices and 9 compliances (m/N,
 * row-major 3×3, the counts times the column's unit) per entry.
 */
export class ColumnCache {
  constructor() { this.columns = new Map(); }
  /** Keeps a decoded ResidualColumn ({node, unit, entries}). */
  insert(column) {
    const n = column.entries.length;
    const vertices = new Uint32Array(n);
    const compliance = new Float32Array(9 * n);
    const unit = column.unit;
    column.entries.forEach((e, i) => {
      vertices[i] = e.vertex;
      for (let j = 0; j < 9; j++) compliance[9 * i + j] = e.compliance[j] * unit;
    });
    this.columns.set(column.node, { vertices, compliance });
  }
  /** Drops the columns a decoded ForgetColumns ({nodes}) names. */
  forget(message) { for (const node of message.nodes) this.columns.delete(node); }
  get size() { return this.columns.size; }
}

/**
 * Surface positions (flat Float32Array, 3 per vertex) from a decoded SceneInit, the
 * ColumnCache and a Frame: rest + Σ q_j φ_j + Σ column(load.node)·load.force +
 * corrections, or the frame's positions. Writes into `out` when given (length 3·n) to
 * avoid allocation per frame. Throws an Error naming what does not fit.
 */
export function reconstructPositions(scene, columns, frame, out) {
  const rest = scene.rest_positions;
  const n = rest.length / 3;
  const result = out ?? new Float32Array(rest.length);
  const d = frame.deformation;
  if (d.Positions) {
    if (d.Positions.positions.length !== rest.length) {
      throw new Error(`frame has ${d.Positions.positions.length / 3} positions, the scene ${n} vertices`);
    }
    result.set(d.Positions.positions);
    return result;
  }
  const { coordinates: q, loads, correction_unit: unit, corrections } = d.Superposed;
  const basis = scene.modal_basis;
  const k = basis ? basis.mode_count : 0;
  if (q.length !== k) throw new Error(`frame has ${q.length} modal coordinates, scene ${k} modes`);
  const phi = basis ? basis.vectors : null;
  for (let v = 0; v < n; v++) {
    let x = rest[3 * v], y = rest[3 * v + 1], z = rest[3 * v + 2];
    const row = 3 * v * k;
    for (let j = 0; j < k; j++) {
      const qj = q[j];
      x += qj * phi[row + 3 * j];
      y += qj * phi[row + 3 * j + 1];
      z += qj * phi[row + 3 * j + 2];
    }
    result[3 * v] = x; result[3 * v + 1] = y; result[3 * v + 2] = z;
  }
  for (const load of loads) {
    const column = columns.columns.get(load.node);
    if (!column) throw new Error(`frame loads mesh node ${load.node}, whose residual column was never sent or was forgotten`);
    const [fx, fy, fz] = load.force;
    const { vertices, compliance: c } = column;
    for (let i = 0; i < vertices.length; i++) {
      const v = vertices[i];
      if (v >= n) throw new Error(`the column of node ${load.node} names vertex ${v} of ${n}`);
      const b = 9 * i;
      result[3 * v] += c[b] * fx + c[b + 1] * fy + c[b + 2] * fz;
      result[3 * v + 1] += c[b + 3] * fx + c[b + 4] * fy + c[b + 5] * fz;
      result[3 * v + 2] += c[b + 6] * fx + c[b + 7] * fy + c[b + 8] * fz;
    }
  }
  for (const c of corrections) {
    if (c.vertex >= n) throw new Error(`correction for vertex ${c.vertex} of ${n}`);
    result[3 * c.vertex] += c.displacement[0] * unit;
    result[3 * c.vertex + 1] += c.displacement[1] * unit;
    result[3 * c.vertex + 2] += c.displacement[2] * unit;
  }
  return result;
}
