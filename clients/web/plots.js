// palpa viewer plots on 2D canvases: a strip chart of force and depth over the last
// seconds, and the force–depth curve of the current press. Also the force arrow's
// length scale (logarithmic, so 0.1 N and 20 N both read) and its legend.

/** Colours of the series, shared by the charts and their legends. */
export const COLORS = {
  force: "#7ee787", normal: "#f0b85a", depth: "#79c0ff", grid: "#3a4250", text: "#aab4c0", fade: "#ff6b6b",
};

/** Force at which the arrow's length scale turns from linear to logarithmic (N). */
export const ARROW_LINEAR_BELOW_N = 0.1;

/**
 * Arrow length as a fraction of the scene size for a force of `newtons`: linear up to
 * 0.1 N (0 N → 0), then one step of 0.1 per decade, so 0.1, 1, 10 and 20 N are 0.1,
 * 0.2, 0.3 and 0.33 of the scene.
 */
export function arrowFraction(newtons) {
  const step = 0.1;
  if (newtons <= ARROW_LINEAR_BELOW_N) return step * Math.max(0, newtons) / ARROW_LINEAR_BELOW_N;
  return step * (1 + Math.log10(newtons / ARROW_LINEAR_BELOW_N));
}

// Sizes a canvas's backing store to its CSS box; returns its 2D context in CSS pixels.
function context(canvas) {
  const w = Math.max(1, Math.round(canvas.clientWidth * devicePixelRatio));
  const h = Math.max(1, Math.round(canvas.clientHeight * devicePixelRatio));
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  const g = canvas.getContext("2d");
  g.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
  g.clearRect(0, 0, canvas.clientWidth, canvas.clientHeight);
  g.font = "11px system-ui, sans-serif";
  return g;
}

// A "nice" axis top at or above `v` (1, 2 or 5 × 10ⁿ).
function niceCeil(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v * 0.999);
}

/** Force (N) and depth (mm) over the last `seconds` of scene time. */
export class StripChart {
  constructor(canvas, seconds = 10) {
    this.canvas = canvas;
    this.seconds = seconds;
    this.samples = []; // {t (s), force (N), normal (N), depth (mm)}
    this.marks = []; // {t (s), label}: fades of the force, drawn as red lines
  }

  /** Marks a fade of the force at time `t` (s) with a short `label`. */
  mark(t, label) {
    this.marks.push({ t, label });
    if (this.marks.length > 200) this.marks.shift();
  }

  /** Adds one sample; drops those older than the window, and all after a time jump back. */
  push(t, force, normal, depth) {
    const last = this.samples[this.samples.length - 1];
    if (last && t < last.t) { this.samples = []; this.marks = []; }
    this.samples.push({ t, force, normal, depth });
    while (this.samples.length && this.samples[0].t < t - this.seconds) this.samples.shift();
  }

  draw() {
    const g = context(this.canvas);
    const w = this.canvas.clientWidth, h = this.canvas.clientHeight;
    const left = 34, right = w - 42, top = 16, bottom = h - 16;
    const s = this.samples;
    const now = s.length ? s[s.length - 1].t : 0;
    const fMax = niceCeil(Math.max(1, ...s.map((p) => p.force)));
    const dMax = niceCeil(Math.max(2, ...s.map((p) => p.depth)));
    const x = (t) => right - (now - t) / this.seconds * (right - left);
    g.strokeStyle = COLORS.grid;
    g.strokeRect(left, top, right - left, bottom - top);
    g.fillStyle = COLORS.text;
    g.textAlign = "right";
    g.fillText(`${fMax} N`, left - 3, top + 8);
    g.fillText("0", left - 3, bottom);
    g.textAlign = "left";
    g.fillText(`${dMax} mm`, right + 3, top + 8);
    g.fillText(`−${this.seconds} s`, left, h - 3);
    g.textAlign = "right";
    g.fillText("now", right, h - 3);
    // |f| last and solid, f·n dashed under it: where they coincide |f| stays visible.
    const series = [["depth", dMax, COLORS.depth, []], ["normal", fMax, COLORS.normal, [4, 3]], ["force", fMax, COLORS.force, []]];
    for (const [key, max, color, dash] of series) {
      g.strokeStyle = color;
      g.lineWidth = 1.5;
      g.setLineDash(dash);
      g.beginPath();
      s.forEach((p, i) => {
        const y = bottom - Math.min(1, p[key] / max) * (bottom - top);
        if (i === 0) g.moveTo(x(p.t), y); else g.lineTo(x(p.t), y);
      });
      g.stroke();
    }
    g.setLineDash([]);
    g.strokeStyle = COLORS.fade;
    g.fillStyle = COLORS.fade;
    g.textAlign = "center";
    for (const m of this.marks.filter((m) => m.t >= now - this.seconds)) {
      const mx = Math.min(right, x(m.t));
      g.beginPath();
      g.moveTo(mx, top);
      g.lineTo(mx, bottom);
      g.stroke();
      g.fillText(m.label, mx, bottom - 3);
    }
    g.textAlign = "left";
    let lx = left;
    for (const [label, color] of [["|f|", COLORS.force], ["f·n", COLORS.normal], ["depth", COLORS.depth]]) {
      g.fillStyle = color;
      g.fillText(label, lx, top - 4);
      lx += g.measureText(label).width + 10;
    }
  }
}

/** The normal force (N) against depth (mm) of the current press. */
export class ForceDepthCurve {
  constructor(canvas) {
    this.canvas = canvas;
    this.points = [];
  }

  /** Starts a new press. */
  reset() { this.points = []; }

  push(depth, normal) { this.points.push({ depth, normal }); }

  draw() {
    const g = context(this.canvas);
    const w = this.canvas.clientWidth, h = this.canvas.clientHeight;
    const left = 34, right = w - 8, top = 16, bottom = h - 16;
    const p = this.points;
    const fMax = niceCeil(Math.max(1, ...p.map((q) => q.normal)));
    const dMax = niceCeil(Math.max(2, ...p.map((q) => q.depth)));
    g.strokeStyle = COLORS.grid;
    g.strokeRect(left, top, right - left, bottom - top);
    g.fillStyle = COLORS.text;
    g.textAlign = "right";
    g.fillText(`${fMax} N`, left - 3, top + 8);
    g.fillText("0", left - 3, bottom);
    g.fillText(`${dMax} mm`, right, h - 3);
    g.textAlign = "left";
    g.fillText("force–depth of this press", left, top - 4);
    g.strokeStyle = COLORS.normal;
    g.lineWidth = 1.5;
    g.beginPath();
    p.forEach((q, i) => {
      const x = left + Math.min(1, q.depth / dMax) * (right - left);
      const y = bottom - Math.min(1, q.normal / fMax) * (bottom - top);
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke();
  }
}

/**
 * The arrow legend: bars as long as the arrow of 0.1, 1 and 10 N at the camera target,
 * `pixelsPerMetre` there, for a scene `size` m across.
 */
export function drawArrowLegend(canvas, pixelsPerMetre, size) {
  const g = context(canvas);
  g.fillStyle = COLORS.text;
  g.textAlign = "left";
  g.fillText("force arrow (log length)", 0, 10);
  [0.1, 1, 10].forEach((f, i) => {
    const y = 22 + 12 * i;
    const len = Math.min(canvas.clientWidth - 40, arrowFraction(f) * size * pixelsPerMetre);
    g.fillStyle = COLORS.force;
    g.fillRect(0, y - 4, len, 3);
    g.fillStyle = COLORS.text;
    g.fillText(`${f} N`, len + 4, y);
  });
}

/** A scale bar of a round length (m) near 80 px long, `pixelsPerMetre` at the target. */
export function drawScaleBar(canvas, pixelsPerMetre) {
  const g = context(canvas);
  const metres = niceCeil(80 / pixelsPerMetre) / 2;
  const len = metres * pixelsPerMetre;
  g.strokeStyle = COLORS.text;
  g.lineWidth = 2;
  g.beginPath();
  g.moveTo(1, 4); g.lineTo(1, 12); g.moveTo(1, 8); g.lineTo(1 + len, 8); g.moveTo(1 + len, 4); g.lineTo(1 + len, 12);
  g.stroke();
  g.fillStyle = COLORS.text;
  g.fillText(metres >= 0.01 ? `${+(metres * 100).toFixed(1)} cm` : `${+(metres * 1000).toFixed(1)} mm`, len + 6, 12);
  return metres;
}
