// palpa browser viewer: WebGL2, no dependencies. Receives the visual stream
// (protocol.js), rebuilds the surface from modal coordinates, shades it with normals
// recomputed every frame, and draws the probe, its target, the proxy, the force arrow
// (logarithmic length), the ground grid and, in x-ray, the regions of other materials.
// A device that reports the stylus's orientation gets the stylus drawn from the tip along
// it (tinted while a button is down); buttons and gripper are in the panel.
// With ?token=… in the URL, a drag presses the virtual probe into the tissue along the
// surface normal where the drag began; plots.js draws force and depth.

import {
  ColumnCache, decodeServerMessage, encodeClientMessage, reconstructPositions, PROTOCOL_VERSION,
} from "./protocol.js";
import { StripChart, ForceDepthCurve, arrowFraction, drawArrowLegend, drawScaleBar } from "./plots.js";

const $ = (id) => document.getElementById(id);
const token = new URLSearchParams(location.search).get("token");
const XRAY_AT_START = new URLSearchParams(location.search).has("xray");

/** Depth per pixel of vertical drag (m): 60 px press 6 mm. */
const DEPTH_PER_PIXEL = 1e-4;
/** Depth per key press (m). */
const DEPTH_STEP = 5e-4;
/** Length of the drawn stylus, as a share of the tissue's size. */
const STYLUS_LENGTH = 0.35;
/** Reconnection delays (ms): doubled from the first to the last after each failure. */
const RETRY_FIRST_MS = 250, RETRY_LAST_MS = 2000;

// State visible to tests and to the browser console: the newest frame, the frame drawn
// last and the surface positions reconstructed for it; whether control is granted
// (null until the server answered), the current press, the x-ray toggle, and how many
// times the stream connected.
const state = {
  hello: null, scene: null, frame: null, frames: 0, lost: 0, drawnSequence: -1, error: null,
  safety: new Map(), fades: 0, lastFade: null, notices: [], plotMarks: 0,
  renderedFrames: 0, drawnFrame: null, positions: null, control: null, press: null,
  // Whether the tissue model runs: a cached start serves the viewer while K is still
  // being factorised, and frames show the tissue at rest (scene time 0) until then.
  live: false,
  xray: false, connections: 0, notice: null, curvePoints: 0,
  // The residual columns the server sent this connection, the newest frame's surface
  // rebuilt on arrival (the columns may change before it is drawn), and the bandwidth of
  // the last second (bytes/s: frames, one-off columns; the newest frame's size, bytes).
  columns: new ColumnCache(), framePositions: null,
  bandwidth: { frames: 0, oneOff: 0, lastFrame: 0 },
};
window.palpaViewer = state;

// ---------- small matrix helpers (column-major 4×4, as WebGL expects) ----------
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const scale = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const norm = (a) => Math.hypot(a[0], a[1], a[2]);
const unit = (a) => { const n = norm(a) || 1; return scale(a, 1 / n); };

function perspective(fovy, aspect, near, far) {
  const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
  return [f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0];
}
function lookAt(eye, target, up) {
  const z = unit(sub(eye, target)), x = unit(cross(up, z)), y = cross(z, x);
  return [x[0], y[0], z[0], 0, x[1], y[1], z[1], 0, x[2], y[2], z[2], 0,
    -dot(x, eye), -dot(y, eye), -dot(z, eye), 1];
}
function multiply(a, b) {
  const out = new Array(16);
  for (let c = 0; c < 4; c++) {
    for (let r = 0; r < 4; r++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
      out[c * 4 + r] = s;
    }
  }
  return out;
}
// Model matrix that maps the unit z axis onto `dir` (length = |dir|), scaled by `s`
// across, placed at `at`.
function orient(at, dir, s) {
  const len = norm(dir) || 1e-9, z = scale(dir, 1 / len);
  const helper = Math.abs(z[2]) < 0.9 ? [0, 0, 1] : [1, 0, 0];
  const x = unit(cross(helper, z)), y = cross(z, x);
  return [x[0] * s, x[1] * s, x[2] * s, 0, y[0] * s, y[1] * s, y[2] * s, 0,
    z[0] * len, z[1] * len, z[2] * len, 0, at[0], at[1], at[2], 1];
}

// ---------- WebGL setup ----------
const canvas = $("view");
const gl = canvas.getContext("webgl2", { antialias: true, preserveDrawingBuffer: true });
if (!gl) {
  $("status").textContent = "WebGL2 is not available in this browser";
  throw new Error("no WebGL2");
}

const program = (() => {
  const vs = `#version 300 es
    in vec3 position; in vec3 normal;
    uniform mat4 viewProj; uniform mat4 model;
    out vec3 vNormal; out vec3 vWorld;
    void main() {
      vec4 w = model * vec4(position, 1.0);
      vWorld = w.xyz;
      vNormal = mat3(model) * normal;
      gl_Position = viewProj * w;
    }`;
  const fs = `#version 300 es
    precision highp float;
    in vec3 vNormal; in vec3 vWorld;
    uniform vec3 color; uniform vec3 eye; uniform float alpha;
    out vec4 outColor;
    void main() {
      vec3 n = normalize(vNormal);
      vec3 v = normalize(eye - vWorld);
      if (dot(n, v) < 0.0) n = -n;
      vec3 l = normalize(v + vec3(0.3, 0.2, 0.6));
      float diffuse = max(dot(n, l), 0.0);
      float spec = pow(max(dot(n, normalize(l + v)), 0.0), 40.0);
      outColor = vec4(color * (0.28 + 0.72 * diffuse) + vec3(0.25) * spec, alpha);
    }`;
  const compile = (type, src) => {
    const s = gl.createShader(type);
    gl.shaderSource(s, src);
    gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
    return s;
  };
  const p = gl.createProgram();
  gl.attachShader(p, compile(gl.VERTEX_SHADER, vs));
  gl.attachShader(p, compile(gl.FRAGMENT_SHADER, fs));
  gl.bindAttribLocation(p, 0, "position");
  gl.bindAttribLocation(p, 1, "normal");
  gl.linkProgram(p);
  if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(p));
  return p;
})();
const uniform = (name) => gl.getUniformLocation(program, name);
const u = {
  viewProj: uniform("viewProj"), model: uniform("model"), color: uniform("color"), eye: uniform("eye"),
  alpha: uniform("alpha"),
};

function makeMesh(positions, normals, indices, usage) {
  const vao = gl.createVertexArray();
  gl.bindVertexArray(vao);
  const pos = gl.createBuffer();
  gl.bindBuffer(gl.ARRAY_BUFFER, pos);
  gl.bufferData(gl.ARRAY_BUFFER, positions, usage);
  gl.enableVertexAttribArray(0);
  gl.vertexAttribPointer(0, 3, gl.FLOAT, false, 0, 0);
  const nrm = gl.createBuffer();
  gl.bindBuffer(gl.ARRAY_BUFFER, nrm);
  gl.bufferData(gl.ARRAY_BUFFER, normals, usage);
  gl.enableVertexAttribArray(1);
  gl.vertexAttribPointer(1, 3, gl.FLOAT, false, 0, 0);
  const idx = gl.createBuffer();
  gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, idx);
  gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, indices, gl.STATIC_DRAW);
  gl.bindVertexArray(null);
  return { vao, pos, nrm, count: indices.length };
}

// Unit sphere (UV) and a unit arrow along +z (shaft then cone), for probe, proxy, force.
function sphereMesh(rings = 12, segments = 18) {
  const p = [], idx = [];
  for (let i = 0; i <= rings; i++) {
    const th = (i / rings) * Math.PI;
    for (let j = 0; j <= segments; j++) {
      const ph = (j / segments) * 2 * Math.PI;
      p.push(Math.sin(th) * Math.cos(ph), Math.sin(th) * Math.sin(ph), Math.cos(th));
    }
  }
  for (let i = 0; i < rings; i++) {
    for (let j = 0; j < segments; j++) {
      const a = i * (segments + 1) + j, b = a + segments + 1;
      idx.push(a, b, a + 1, b, b + 1, a + 1);
    }
  }
  const f = new Float32Array(p);
  return makeMesh(f, f, new Uint32Array(idx), gl.STATIC_DRAW);
}
function arrowMesh(segments = 16) {
  const p = [], n = [], idx = [];
  const ring = (z, r, nz) => {
    const start = p.length / 3;
    for (let j = 0; j <= segments; j++) {
      const ph = (j / segments) * 2 * Math.PI, c = Math.cos(ph), s = Math.sin(ph);
      p.push(r * c, r * s, z);
      n.push(c, s, nz);
    }
    return start;
  };
  const strip = (a, b) => {
    for (let j = 0; j < segments; j++) idx.push(a + j, a + j + 1, b + j, b + j, a + j + 1, b + j + 1);
  };
  strip(ring(0, 0.035, 0), ring(0.75, 0.035, 0));
  strip(ring(0.75, 0.1, 0.4), ring(1.0, 0.0, 0.4));
  return makeMesh(new Float32Array(p), new Float32Array(n), new Uint32Array(idx), gl.STATIC_DRAW);
}
// Unit cylinder along +z (radius 1, z from 0 to 1), for the stylus.
function cylinderMesh(segments = 16) {
  const p = [], n = [], idx = [];
  for (const z of [0, 1]) {
    for (let j = 0; j <= segments; j++) {
      const ph = (j / segments) * 2 * Math.PI;
      p.push(Math.cos(ph), Math.sin(ph), z);
      n.push(Math.cos(ph), Math.sin(ph), 0);
    }
  }
  for (let j = 0; j < segments; j++) {
    const a = j, b = j + segments + 1;
    idx.push(a, a + 1, b, b, a + 1, b + 1);
  }
  return makeMesh(new Float32Array(p), new Float32Array(n), new Uint32Array(idx), gl.STATIC_DRAW);
}
const sphere = sphereMesh();
const arrow = arrowMesh();
const cylinder = cylinderMesh();

// The stylus's axis in the scene: the tool's +x turned by the unit quaternion (x, y, z, w),
// from the tip towards the hand (CHAI3D's convention, protocol/SPEC.md).
function stylusAxis(q) {
  const [x, y, z, w] = q;
  return [1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)];
}
state.stylusAxis = stylusAxis;

// ---------- scene state ----------
let tissue = null; // { mesh, positions, normals, triangles, rest, center, size, up, e1, e2, grid, regions }
const camera = { yaw: -0.6, pitch: 0.55, distance: 1, target: [0, 0, 0] };

// Two unit vectors spanning the plane perpendicular to `up`.
function planeBasis(up) {
  const helper = Math.abs(up[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
  const e1 = unit(cross(helper, up));
  return [e1, cross(up, e1)];
}

// A square grid of lines in the plane through `at` perpendicular to `up`, `step` m apart,
// `count` steps each way.
function gridMesh(at, up, step, count) {
  const [e1, e2] = planeBasis(up);
  const p = [], n = [], idx = [];
  const half = step * count;
  for (let i = -count; i <= count; i++) {
    for (const [a, b] of [[e1, e2], [e2, e1]]) {
      for (const end of [-half, half]) {
        p.push(...add(at, add(scale(a, i * step), scale(b, end))));
        n.push(...up);
      }
      idx.push(p.length / 3 - 2, p.length / 3 - 1);
    }
  }
  return makeMesh(new Float32Array(p), new Float32Array(n), new Uint32Array(idx), gl.STATIC_DRAW);
}

// A round step (1, 2 or 5 × 10ⁿ m) near a tenth of `size`.
function gridStep(size) {
  const target = size / 10, p = Math.pow(10, Math.floor(Math.log10(target)));
  return [1, 2, 5, 10].map((m) => m * p).reduce((best, m) => (Math.abs(m - target) < Math.abs(best - target) ? m : best));
}

function loadScene(scene) {
  const rest = scene.rest_positions;
  const n = rest.length / 3;
  let lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  for (let v = 0; v < n; v++) {
    for (let c = 0; c < 3; c++) {
      lo[c] = Math.min(lo[c], rest[3 * v + c]);
      hi[c] = Math.max(hi[c], rest[3 * v + c]);
    }
  }
  const center = scale(add(lo, hi), 0.5);
  const size = norm(sub(hi, lo)) || 1;
  const up = unit(Array.from(scene.up));
  const [e1, e2] = planeBasis(up);
  // The ground: the plane below the lowest point along `up`.
  let lowest = Infinity;
  for (let v = 0; v < n; v++) lowest = Math.min(lowest, dot([rest[3 * v], rest[3 * v + 1], rest[3 * v + 2]], up));
  const ground = add(center, scale(up, lowest - dot(center, up) - 1e-4));
  const step = gridStep(size);
  const positions = new Float32Array(rest);
  const normals = new Float32Array(rest.length);
  computeNormals(positions, scene.triangles, normals);
  const regions = scene.regions.map((r) => {
    const smooth = smoothSurface(r.rest_positions, r.triangles, REGION_SMOOTHING);
    const rn = new Float32Array(smooth.length);
    computeNormals(smooth, r.triangles, rn);
    return { name: r.name, young: r.young_pa, positions: smooth, mesh: makeMesh(smooth, rn, r.triangles, gl.STATIC_DRAW) };
  });
  tissue = {
    mesh: makeMesh(positions, normals, scene.triangles, gl.DYNAMIC_DRAW),
    positions, normals, triangles: scene.triangles, rest, center, size, up, e1, e2,
    grid: gridMesh(ground, up, step, Math.ceil(0.8 * size / step)), gridStep: step, regions,
  };
  camera.target = center;
  camera.distance = 1.8 * size;
  state.scene = scene;
  $("xray-button").hidden = regions.length === 0;
  $("regions").textContent = regions.map((r) => `${r.name} (E = ${(r.young / 1e3).toFixed(0)} kPa)`).join(", ");
  $("grid").textContent = `${+(step * 100).toFixed(2)} cm`;
}

// Area-weighted vertex normals of the deformed surface.
// Taubin λ|μ passes over a region's boundary: the faces of its tetrahedra form a
// staircase with single tetrahedra hanging off it, drawn smooth without shrinking.
const REGION_SMOOTHING = 20;

// The surface `p` (xyz per vertex) over `tris` after `passes` Taubin λ|μ passes, each a
// step towards the mean of the vertex's neighbours then one back (umbrella operator).
function smoothSurface(p, tris, passes) {
  const n = p.length / 3;
  const neighbours = Array.from({ length: n }, () => new Set());
  for (let t = 0; t < tris.length; t += 3) {
    for (let k = 0; k < 3; k++) {
      const a = tris[t + k], b = tris[t + (k + 1) % 3];
      neighbours[a].add(b);
      neighbours[b].add(a);
    }
  }
  const lists = neighbours.map((s) => Array.from(s));
  let from = new Float32Array(p), to = new Float32Array(p.length);
  const step = (factor) => {
    for (let v = 0; v < n; v++) {
      const list = lists[v];
      for (let c = 0; c < 3; c++) {
        let mean = 0;
        for (const u of list) mean += from[3 * u + c];
        const own = from[3 * v + c];
        to[3 * v + c] = list.length ? own + factor * (mean / list.length - own) : own;
      }
    }
    [from, to] = [to, from];
  };
  for (let i = 0; i < passes; i++) {
    step(0.5);
    step(-0.53);
  }
  return from;
}

function computeNormals(p, tris, out) {
  out.fill(0);
  for (let t = 0; t < tris.length; t += 3) {
    const a = 3 * tris[t], b = 3 * tris[t + 1], c = 3 * tris[t + 2];
    const ux = p[b] - p[a], uy = p[b + 1] - p[a + 1], uz = p[b + 2] - p[a + 2];
    const vx = p[c] - p[a], vy = p[c + 1] - p[a + 1], vz = p[c + 2] - p[a + 2];
    const nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
    for (const i of [a, b, c]) { out[i] += nx; out[i + 1] += ny; out[i + 2] += nz; }
  }
  for (let i = 0; i < out.length; i += 3) {
    const l = Math.hypot(out[i], out[i + 1], out[i + 2]) || 1;
    out[i] /= l; out[i + 1] /= l; out[i + 2] /= l;
  }
}

// ---------- plots ----------
const strip = new StripChart($("strip"), 10);
const curve = new ForceDepthCurve($("curve"));
let wasInContact = false;

// Depth (m, ≥ 0) and normal force (N, along the contact normal, out of the tissue).
function contactOf(f) {
  if (!f.in_contact) return { depth: 0, normal: 0 };
  return { depth: Math.max(0, f.depth), normal: dot(f.force, f.normal) };
}

function plotFrame(f) {
  const c = contactOf(f);
  strip.push(f.scene_time, norm(f.force), c.normal, c.depth * 1e3);
  if (f.in_contact && !wasInContact) curve.reset();
  if (f.in_contact) curve.push(c.depth * 1e3, c.normal);
  wasInContact = f.in_contact;
  state.curvePoints = curve.points.length;
}

// ---------- safety ----------
const REASONS = {
  Normal: "full force", Ramping: "ramping in", StaleSample: "stale device sample",
  StalledModel: "stalled model thread", DeviceFault: "device fault", NotFinite: "non-finite value",
  Clamped: "force clamped", RateLimited: "force rate limited",
};
const FADES = new Set(["StaleSample", "StalledModel", "DeviceFault", "NotFinite"]);

function fadedTicks(c) { return c.stale_sample + c.stalled_model + c.device_fault + c.not_finite; }

// The panel names each device's state; a new fade shows its reason at once and marks the
// force plot where it began. state.fades counts the fades shown (tests read it).
function showSafety(report) {
  const parts = [];
  let active = null;
  for (const d of report.devices) {
    const before = state.safety.get(d.device);
    const fade = d.last_fade;
    const isNew = fade && (!before?.last_fade || before.last_fade.start_s !== fade.start_s ||
      before.last_fade.reason !== fade.reason);
    if (isNew) {
      state.fades++;
      state.lastFade = { device: d.device, ...fade, shownAt: performance.now() };
      strip.mark(fade.start_s, report.devices.length > 1 ? `${d.device}` : "fade");
      state.plotMarks = strip.marks.length;
    }
    if (FADES.has(d.state) && fade) active = { device: d.device, ...fade };
    state.safety.set(d.device, d);
    const prefix = report.devices.length > 1 ? `${d.device}: ` : "";
    parts.push(`${prefix}${REASONS[d.state]}, ${fadedTicks(d.counts)} faded`);
  }
  $("safety").textContent = parts.join("; ");
  const banner = $("fade");
  const shown = active ?? state.lastFade;
  if (shown) {
    const who = report.devices.length > 1 ? ` (device ${shown.device})` : "";
    banner.hidden = false;
    banner.textContent = `${active ? "force faded" : "last fade"}${who}: ${REASONS[shown.reason]} at ` +
      `t = ${shown.start_s.toFixed(2)} s, ${shown.force_removed.toFixed(2)} N off`;
  }
}

// ---------- stream ----------
const rate = {
  count: 0, rendered: 0, since: performance.now(), hz: 0, latencies: [], frameBytes: 0, oneOffBytes: 0,
};
let socket = null;
let retryMs = RETRY_FIRST_MS;

function showStatus(text) { $("status").textContent = text; }

// The status while connected: in control or not, and whether the tissue is ready.
function connectedStatus() {
  const base = state.control === true ? "connected, in control" : "connected";
  return state.live ? base : `${base}; preparing the tissue…`;
}

// The tissue runs from the first frame past scene time 0 (or the first safety report).
function markLive() {
  if (state.live) return;
  const shown = connectedStatus();
  state.live = true;
  if ($("status").textContent === shown) showStatus(connectedStatus());
}

function updateHelp() {
  const control = token && state.hello?.control_allowed && state.control !== false;
  // A viewer that cannot move the probe says so beside the scene's name, and why.
  const badge = $("badge");
  badge.hidden = !!control;
  badge.title = !token
    ? "this address has no ?token=…: open the one palpa serve printed to move the probe"
    : !state.hello?.control_allowed
      ? "this server takes no control from viewers"
      : "the server refused this token (a restarted server prints a new one)";
  $("help").textContent = control
    ? "drag: press in along the normal (down = deeper) · alt/ctrl-drag: slide · ↓/+ ↑/−: depth ±0.5 mm · esc: release · shift-drag: orbit · wheel: zoom · R: reset · X: x-ray"
    : "drag: orbit · wheel: zoom · right-drag: pan · X: x-ray (read-only" + (token ? ")" : ": add ?token=… to control)");
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws`);
  socket.binaryType = "arraybuffer";
  socket.onopen = () => {
    retryMs = RETRY_FIRST_MS;
    state.connections++;
    state.control = null;
    state.live = false;
    showStatus(connectedStatus());
  };
  socket.onclose = () => {
    if (state.error) {
      showStatus(`closed: ${state.error}`);
      return;
    }
    // A server restart or a network hiccup: try again, sooner at first.
    showStatus(`${state.notice ?? "disconnected"}; reconnecting…`);
    setTimeout(connect, retryMs);
    retryMs = Math.min(RETRY_LAST_MS, 2 * retryMs);
  };
  socket.onmessage = (event) => {
    let message;
    try {
      message = decodeServerMessage(event.data);
    } catch (e) {
      state.error = `bad message: ${e.message}`;
      socket.close();
      return;
    }
    if (message.Hello) {
      state.hello = message.Hello;
      state.notice = null;
      if (message.Hello.protocol_version !== PROTOCOL_VERSION) {
        state.error = `server speaks protocol version ${message.Hello.protocol_version}, this viewer ${PROTOCOL_VERSION}: reload the page`;
        socket.close();
        return;
      }
      $("scene").textContent = message.Hello.scene_name;
      // Ask at once whether the token (perhaps from a previous server) still grants control.
      if (token && message.Hello.control_allowed) sendNow("CheckToken");
      updateHelp();
    } else if (message.SceneInit) {
      state.columns = new ColumnCache();
      state.framePositions = new Float32Array(message.SceneInit.rest_positions.length);
      loadScene(message.SceneInit);
      // `?xray` in the address opens in x-ray (for links and screenshots).
      if (XRAY_AT_START && !state.xray) toggleXray();
    } else if (message.ResidualColumn) {
      rate.oneOffBytes += event.data.byteLength;
      state.columns.insert(message.ResidualColumn);
    } else if (message.ForgetColumns) {
      rate.oneOffBytes += event.data.byteLength;
      state.columns.forget(message.ForgetColumns);
    } else if (message.Frame) {
      const f = message.Frame;
      rate.frameBytes += event.data.byteLength;
      state.bandwidth.lastFrame = event.data.byteLength;
      try {
        reconstructPositions(state.scene, state.columns, f, state.framePositions);
      } catch (e) {
        state.error = `frame ${f.sequence}: ${e.message}`;
        socket.close();
        return;
      }
      if (state.frame && f.sequence > state.frame.sequence) state.lost += f.sequence - state.frame.sequence - 1;
      state.frame = f;
      state.frames++;
      if (f.scene_time > 0) markLive();
      rate.count++;
      rate.latencies.push(Date.now() - f.sent_unix_us / 1000);
      plotFrame(f);
    } else if (message.HapticStats) {
      const s = message.HapticStats;
      $("haptic").textContent = `${(s.period_p50_s * 1e3).toFixed(3)} / ${(s.period_p99_s * 1e3).toFixed(3)} / ${(s.period_max_s * 1e3).toFixed(2)} ms`;
      $("missed").textContent = `${s.missed_deadlines} of ${s.ticks}`;
    } else if (message.Safety) {
      markLive();
      showSafety(message.Safety);
    } else if (message.Notice) {
      state.notices.push(message.Notice);
      showStatus(message.Notice.message);
    } else if (message.ControlStatus) {
      state.control = message.ControlStatus.granted;
      if (!state.control) {
        state.press = null;
        showStatus(message.ControlStatus.message);
      } else {
        showStatus(connectedStatus());
      }
      updateHelp();
    } else if (message.Error) {
      // The server is going away: reconnect (a restart); any other error is final.
      const text = `${message.Error.code}: ${message.Error.message}`;
      if (message.Error.code === "ShuttingDown") state.notice = "server stopped"; else state.error = text;
      showStatus(text);
    }
  };
}

function sendNow(command) {
  if (!token || !socket || socket.readyState !== WebSocket.OPEN) return;
  socket.send(encodeClientMessage({ Control: { token, command } }));
}

function send(command) {
  if (state.control !== false) sendNow(command);
}

// ---------- input: press, slide, orbit, zoom, pan, keys ----------
function eyePosition() {
  const { yaw, pitch, distance, target } = camera;
  const { up, e1, e2 } = tissue ?? { up: [0, 0, 1], e1: [1, 0, 0], e2: [0, 1, 0] };
  const dir = add(scale(e1, Math.cos(pitch) * Math.cos(yaw)), add(scale(e2, Math.cos(pitch) * Math.sin(yaw)), scale(up, Math.sin(pitch))));
  return add(target, scale(dir, distance));
}
const sceneUp = () => tissue?.up ?? [0, 0, 1];

// Ray from the camera through canvas pixel (x, y).
function pickRay(x, y) {
  const eye = eyePosition();
  const forward = unit(sub(camera.target, eye));
  const right = unit(cross(forward, sceneUp()));
  const up = cross(right, forward);
  const t = Math.tan(FOVY / 2), aspect = canvas.clientWidth / canvas.clientHeight;
  const sx = (2 * x / canvas.clientWidth - 1) * t * aspect, sy = (1 - 2 * y / canvas.clientHeight) * t;
  return { origin: eye, dir: unit(add(forward, add(scale(right, sx), scale(up, sy)))) };
}

// Nearest hit of a ray with the rest surface (Möller–Trumbore): point and outward normal.
function pickSurface(ray) {
  if (!tissue) return null;
  const p = tissue.rest, tris = tissue.triangles;
  let best = null;
  for (let t = 0; t < tris.length; t += 3) {
    const a = [p[3 * tris[t]], p[3 * tris[t] + 1], p[3 * tris[t] + 2]];
    const b = [p[3 * tris[t + 1]], p[3 * tris[t + 1] + 1], p[3 * tris[t + 1] + 2]];
    const c = [p[3 * tris[t + 2]], p[3 * tris[t + 2] + 1], p[3 * tris[t + 2] + 2]];
    const e1 = sub(b, a), e2 = sub(c, a), h = cross(ray.dir, e2), det = dot(e1, h);
    if (Math.abs(det) < 1e-14) continue;
    const s = sub(ray.origin, a), uu = dot(s, h) / det;
    if (uu < 0 || uu > 1) continue;
    const q = cross(s, e1), vv = dot(ray.dir, q) / det;
    if (vv < 0 || uu + vv > 1) continue;
    const dist = dot(e2, q) / det;
    if (dist > 0 && (!best || dist < best.dist)) {
      best = { dist, point: add(ray.origin, scale(ray.dir, dist)), normal: unit(cross(e1, e2)) };
    }
  }
  return best;
}

const canControl = () => !!token && !!state.hello?.control_allowed && state.control !== false;

// The press: the surface point grabbed and its outward normal, and the depth (m) the
// probe's target lies under it along the normal. The target never moves sideways
// unless the press slides.
function pressAt(hit, depth) {
  state.press = { grab: hit.point, normal: hit.normal, depth: Math.max(0, depth) };
  aimProbe();
}
function aimProbe() {
  const p = state.press;
  p.target = sub(p.grab, scale(p.normal, p.depth));
  pendingProbe = p.target;
  $("target").textContent = `${(p.depth * 1e3).toFixed(1)} mm`;
}
function release() {
  if (state.press) send("ReleaseProbe");
  state.press = null;
  $("target").textContent = "–";
}

let drag = null;
let pendingProbe = null;
let pointer = null; // last pointer position over the canvas (px)
canvas.addEventListener("contextmenu", (e) => e.preventDefault());
canvas.addEventListener("pointerdown", (e) => {
  canvas.setPointerCapture(e.pointerId);
  const controlling = canControl() && e.button === 0 && !e.shiftKey;
  const hit = controlling ? pickSurface(pickRay(e.offsetX, e.offsetY)) : null;
  drag = { x: e.offsetX, y: e.offsetY, button: e.button, probe: !!hit };
  if (hit) pressAt(hit, 0);
});
canvas.addEventListener("pointermove", (e) => {
  pointer = [e.offsetX, e.offsetY];
  if (!drag) return;
  const dx = e.offsetX - drag.x, dy = e.offsetY - drag.y;
  drag.x = e.offsetX; drag.y = e.offsetY;
  if (drag.probe && state.press) {
    if (e.altKey || e.ctrlKey) {
      // Slide: the grab point follows the pointer over the surface at the same depth.
      const hit = pickSurface(pickRay(e.offsetX, e.offsetY));
      if (hit) pressAt(hit, state.press.depth);
    } else {
      state.press.depth = Math.max(0, state.press.depth + dy * DEPTH_PER_PIXEL);
      aimProbe();
    }
  } else if (drag.button === 2) {
    const eye = eyePosition(), forward = unit(sub(camera.target, eye));
    const right = unit(cross(forward, sceneUp())), up = cross(right, forward);
    const k = camera.distance / canvas.clientHeight;
    camera.target = add(camera.target, add(scale(right, -dx * k), scale(up, dy * k)));
  } else {
    camera.yaw -= dx * 0.01;
    camera.pitch = Math.max(-1.5, Math.min(1.5, camera.pitch + dy * 0.01));
  }
});
const endDrag = () => {
  if (drag?.probe) release();
  drag = null;
};
canvas.addEventListener("pointerup", endDrag);
canvas.addEventListener("pointercancel", endDrag);
canvas.addEventListener("wheel", (e) => {
  e.preventDefault();
  camera.distance *= Math.exp(e.deltaY * 0.001);
}, { passive: false });

function toggleXray() {
  state.xray = !state.xray && (tissue?.regions.length ?? 0) > 0;
  $("xray-button").classList.toggle("on", state.xray);
}
$("xray-button").addEventListener("click", toggleXray);

// Depth keys: deepen or lift the current press, or start one under the pointer (else
// under the centre of the view).
function stepDepth(step) {
  if (!canControl() || !tissue) return;
  if (!state.press) {
    const [x, y] = pointer ?? [canvas.clientWidth / 2, canvas.clientHeight / 2];
    const hit = pickSurface(pickRay(x, y));
    if (!hit || step < 0) return;
    pressAt(hit, 0);
  }
  state.press.depth = Math.max(0, state.press.depth + step);
  aimProbe();
}
addEventListener("keydown", (e) => {
  if (e.key === "r" || e.key === "R") send("ResetTissue");
  else if (e.key === "x" || e.key === "X") toggleXray();
  else if (e.key === "ArrowDown" || e.key === "+" || e.key === "=") stepDepth(DEPTH_STEP);
  else if (e.key === "ArrowUp" || e.key === "-") stepDepth(-DEPTH_STEP);
  else if (e.key === "Escape") release();
  else return;
  e.preventDefault();
});

// ---------- rendering ----------
const FOVY = 0.8;

function drawMesh(mesh, model, color, alpha = 1, mode = gl.TRIANGLES) {
  gl.uniformMatrix4fv(u.model, false, model);
  gl.uniform3fv(u.color, color);
  gl.uniform1f(u.alpha, alpha);
  gl.bindVertexArray(mesh.vao);
  gl.drawElements(mode, mesh.count, gl.UNSIGNED_INT, 0);
}

function updatePanel(now) {
  if (now - rate.since >= 1000) {
    rate.hz = (rate.count * 1000) / (now - rate.since);
    $("fps").textContent = `${((state.renderedFrames - rate.rendered) * 1000 / (now - rate.since)).toFixed(0)} fps`;
    rate.rendered = state.renderedFrames;
    rate.count = 0;
    const l = rate.latencies.sort((a, b) => a - b);
    const median = l.length ? l[Math.floor(l.length / 2)] : NaN;
    // Latency compares this machine's clock with the server's; a negative one means the
    // two clocks disagree (another machine, or a browser on virtual time), not a fast link.
    $("latency").textContent = !l.length ? "–" : median < 0 ? "clocks differ" : `${median.toFixed(1)} ms`;
    rate.latencies = [];
    $("rate").textContent = `${rate.hz.toFixed(1)} Hz`;
    const seconds = (now - rate.since) / 1000 || 1;
    state.bandwidth.frames = rate.frameBytes / seconds;
    state.bandwidth.oneOff = rate.oneOffBytes / seconds;
    rate.frameBytes = 0;
    rate.oneOffBytes = 0;
    rate.since = now;
    const b = state.bandwidth;
    $("bandwidth").textContent = `${((b.frames + b.oneOff) / 1e3).toFixed(1)} kB/s`;
    $("bandwidth-detail").textContent =
      `${b.lastFrame} B; columns ${(b.oneOff / 1e3).toFixed(1)} kB/s`;
  }
  const f = state.frame;
  if (f) {
    const c = contactOf(f);
    $("force").textContent = `${norm(f.force).toFixed(3)} N`;
    $("contact").textContent = f.in_contact ? `${(c.depth * 1e3).toFixed(1)} mm, f·n ${c.normal.toFixed(2)} N` : "no";
    const st = f.stylus;
    $("buttons").textContent = st ? (st.buttons ? `0b${st.buttons.toString(2)}` : "none") : "–";
    $("gripper").textContent = st?.gripper == null ? "–" : `${(st.gripper * 180 / Math.PI).toFixed(1)}°`;
    $("lost").textContent = String(state.lost);
  }
}

// The page pixel (CSS px) a scene point (m) is drawn at, with the last frame's camera.
let viewProj = null;
state.project = (p) => {
  const m = viewProj, c = [0, 1, 2, 3].map((r) => m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r]);
  const box = canvas.getBoundingClientRect();
  return [box.left + (c[0] / c[3] + 1) / 2 * box.width, box.top + (1 - c[1] / c[3]) / 2 * box.height];
};

// Pixels per metre at the camera target (for the scale bar and the arrow legend).
function pixelsPerMetre() {
  return canvas.clientHeight / (2 * camera.distance * Math.tan(FOVY / 2));
}

function render(now) {
  requestAnimationFrame(render);
  if (pendingProbe) {
    send({ MoveProbe: { position: pendingProbe } });
    pendingProbe = null;
  }
  const w = Math.round(canvas.clientWidth * devicePixelRatio), h = Math.round(canvas.clientHeight * devicePixelRatio);
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  gl.viewport(0, 0, w, h);
  gl.clearColor(0.106, 0.122, 0.153, 1);
  gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
  gl.enable(gl.DEPTH_TEST);
  updatePanel(now);
  strip.draw();
  curve.draw();
  if (!tissue) return;

  const f = state.frame;
  if (f && f.sequence !== state.drawnSequence) {
    tissue.positions.set(state.framePositions);
    computeNormals(tissue.positions, tissue.triangles, tissue.normals);
    gl.bindBuffer(gl.ARRAY_BUFFER, tissue.mesh.pos);
    gl.bufferSubData(gl.ARRAY_BUFFER, 0, tissue.positions);
    gl.bindBuffer(gl.ARRAY_BUFFER, tissue.mesh.nrm);
    gl.bufferSubData(gl.ARRAY_BUFFER, 0, tissue.normals);
    state.drawnSequence = f.sequence;
    state.drawnFrame = f;
    state.positions = tissue.positions;
  }

  const eye = eyePosition();
  const view = lookAt(eye, camera.target, tissue.up);
  const proj = perspective(FOVY, w / h, camera.distance * 0.01, camera.distance * 10);
  viewProj = multiply(proj, view);
  gl.useProgram(program);
  gl.uniformMatrix4fv(u.viewProj, false, viewProj);
  gl.uniform3fv(u.eye, eye);
  const identity = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
  const at = (p, s) => [s, 0, 0, 0, 0, s, 0, 0, 0, 0, s, 0, p[0], p[1], p[2], 1];
  const r = tissue.size * 0.012;
  drawMesh(tissue.grid, identity, [0.32, 0.36, 0.42], 1, gl.LINES);
  if (f) {
    drawMesh(sphere, at(f.probe, r), [0.35, 0.75, 0.95]);
    if (f.stylus?.orientation) {
      // The stylus: a shaft from the tip along its axis, a third of the tissue long,
      // tinted while a button is down.
      const axis = stylusAxis(f.stylus.orientation);
      const length = tissue.size * STYLUS_LENGTH;
      const color = f.stylus.buttons ? [0.98, 0.8, 0.35] : [0.82, 0.84, 0.9];
      drawMesh(cylinder, orient(f.probe, scale(axis, length), r * 0.55), color);
      state.stylusEnd = add(f.probe, scale(axis, length));
    } else {
      state.stylusEnd = null;
    }
    if (f.in_contact) drawMesh(sphere, at(f.proxy, r * 0.8), [0.98, 0.85, 0.3]);
    const magnitude = norm(f.force);
    if (magnitude > 1e-6) {
      // Arrow from the proxy along the force, its length logarithmic in the force.
      const length = tissue.size * arrowFraction(magnitude);
      drawMesh(arrow, orient(f.proxy, scale(f.force, length / magnitude), tissue.size * 0.15), [0.4, 0.95, 0.5]);
    }
  }
  if (state.press?.target) drawMesh(sphere, at(state.press.target, r * 0.6), [0.95, 0.95, 0.95]);
  if (state.xray) {
    // The other materials' regions opaque, the tissue over them translucent.
    for (const region of tissue.regions) drawMesh(region.mesh, identity, [0.6, 0.4, 1.0]);
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
    gl.depthMask(false);
    drawMesh(tissue.mesh, identity, [0.86, 0.45, 0.45], 0.3);
    gl.depthMask(true);
    gl.disable(gl.BLEND);
  } else {
    drawMesh(tissue.mesh, identity, [0.86, 0.45, 0.45]);
  }
  const ppm = pixelsPerMetre();
  drawScaleBar($("scalebar"), ppm);
  drawArrowLegend($("legend"), ppm, tissue.size);
  state.renderedFrames++;
}

connect();
requestAnimationFrame(render);
