// node --test clients/web/: the JavaScript decoder against protocol/vectors/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import {
  decodeServerMessage, decodeClientMessage, encodeClientMessage, reconstructPositions, DecodeError,
  ColumnCache,
} from "./protocol.js";

const vectors = join(dirname(fileURLToPath(import.meta.url)), "../../protocol/vectors");
const names = readdirSync(vectors).filter((f) => f.endsWith(".bin")).map((f) => f.slice(0, -4));

// Compares a decoded value with the JSON of the Rust types. Typed arrays are compared with
// the flattened JSON arrays; f32 values must equal the JSON number rounded to f32.
function same(actual, expected, path) {
  if (ArrayBuffer.isView(actual)) {
    const flat = expected.flat(Infinity);
    assert.equal(actual.length, flat.length, `${path}: length`);
    const f32 = actual instanceof Float32Array;
    flat.forEach((e, i) => assert.equal(actual[i], f32 ? Math.fround(e) : e, `${path}[${i}]`));
  } else if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: array expected`);
    assert.equal(actual.length, expected.length, `${path}: length`);
    expected.forEach((e, i) => same(actual[i], e, `${path}[${i}]`));
  } else if (expected !== null && typeof expected === "object") {
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${path}: keys`);
    for (const k of Object.keys(expected)) same(actual[k], expected[k], `${path}.${k}`);
  } else if (typeof expected === "number" && actual !== expected) {
    assert.equal(actual, Math.fround(expected), `${path}: number`);
  } else {
    assert.equal(actual, expected, path);
  }
}

test("there are vectors for both directions", () => {
  assert.ok(names.some((n) => n.startsWith("server_")));
  assert.ok(names.some((n) => n.startsWith("client_")));
});

for (const name of names) {
  test(`vector ${name}`, () => {
    const bin = new Uint8Array(readFileSync(join(vectors, `${name}.bin`)));
    const json = JSON.parse(readFileSync(join(vectors, `${name}.json`), "utf8"));
    if (name.startsWith("server_")) {
      same(decodeServerMessage(bin), json, name);
    } else {
      same(decodeClientMessage(bin), json, name);
      assert.deepEqual(encodeClientMessage(json), bin, `${name}: encode != bin`);
    }
  });
}

test("truncated and padded messages are DecodeErrors", () => {
  const bin = new Uint8Array(readFileSync(join(vectors, "server_frame_modal.bin")));
  for (let n = 0; n < bin.length; n++) {
    assert.throws(() => decodeServerMessage(bin.subarray(0, n)), DecodeError, `cut at ${n}`);
  }
  const padded = new Uint8Array(bin.length + 1);
  padded.set(bin);
  assert.throws(() => decodeServerMessage(padded), DecodeError);
});

test("reconstruction matches the hand computation of the Rust test", () => {
  const read = (name) => decodeServerMessage(readFileSync(join(vectors, `${name}.bin`)));
  const scene = read("server_scene_init_modal").SceneInit;
  const frame = read("server_frame_modal").Frame;
  const columns = new ColumnCache();
  assert.throws(() => reconstructPositions(scene, columns, frame), /mesh node 17/);
  columns.insert(read("server_residual_column").ResidualColumn);
  const p = reconstructPositions(scene, columns, frame);
  const f = Math.fround;
  const u = 2 ** -20; // the vectors' unit of compliance and correction counts
  const z = f(-0.002) * 0.75 + f(0.00025) * 0.5 + 1024 * u * -1.5 - 512 * u;
  assert.ok(Math.abs(p[3 * 2 + 2] - z) < 1e-9, `${p[3 * 2 + 2]} vs ${z}`);
  assert.ok(Math.abs(p[3 * 2] - (0.1 + 256 * u * 0.5)) < 1e-8);
  assert.ok(Math.abs(p[3 * 1] - (0.1 + f(0.00025) * 0.125)) < 1e-8);
  assert.ok(Math.abs(p[3 * 1 + 2] - (-0.002 + 512 * u * -1.5)) < 1e-8);
  columns.forget(read("server_forget_columns").ForgetColumns);
  assert.equal(columns.size, 0);
});
