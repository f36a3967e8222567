// The Tensor API exercised from JavaScript (Node's test runner, the same wasm the page loads).
import test from "node:test";
import assert from "node:assert/strict";
import kw from "./load.mjs";

const { Tensor } = kw;
const f32 = (...v) => new Float32Array(v);

test("round trips of every plain dtype", () => {
  const a = Tensor.fromFloat32Array(f32(1.5, -2, 3.25, 0), [2, 2]);
  assert.deepEqual(a.shape, [2, 2]);
  assert.deepEqual(a.strides, [2, 1]);
  assert.equal(a.dtype, "f32");
  assert.equal(a.rank, 2);
  assert.equal(a.size, 4);
  assert.equal(a.isContiguous, true);
  assert.deepEqual(a.toFloat32Array(), f32(1.5, -2, 3.25, 0));

  const h = Tensor.fromFloat16Bits(new Uint16Array([0x3c00, 0xc000, 0x7c00]), [3]);
  assert.equal(h.dtype, "f16");
  assert.deepEqual(h.toUint16Array(), new Uint16Array([0x3c00, 0xc000, 0x7c00]));
  assert.deepEqual(h.toDtype("f32").toFloat32Array(), f32(1, -2, Infinity));
  const b = a.toDtype("bf16");
  assert.deepEqual(b.toUint16Array(), new Uint16Array([0x3fc0, 0xc000, 0x4050, 0x0000]));

  assert.deepEqual(Tensor.fromInt8Array(new Int8Array([-128, 127]), [2]).toInt8Array(), new Int8Array([-128, 127]));
  assert.deepEqual(Tensor.fromInt32Array(new Int32Array([7, -7]), [1, 2]).toInt32Array(), new Int32Array([7, -7]));
  assert.deepEqual(Tensor.zeros([3]).toFloat32Array(), f32(0, 0, 0));
  const s = Tensor.fromFloat32Array(f32(42), []);
  assert.equal(s.rank, 0);
  assert.deepEqual(s.toFloat32Array(), f32(42));
});

test("quantized blocks dequantize", () => {
  // One Q8_0 block: d = 0.5 (f16 0x3800), q[j] = j - 16.
  const bytes = new Uint8Array(34);
  bytes[0] = 0x00;
  bytes[1] = 0x38;
  for (let j = 0; j < 32; j++) bytes[2 + j] = (j - 16) & 0xff;
  const q = Tensor.fromQuantized(bytes, "q8_0", [1, 32]);
  assert.equal(q.dtype, "q8_0");
  assert.deepEqual(q.toBytes(), bytes);
  const want = Float32Array.from({ length: 32 }, (_, j) => (j - 16) * 0.5);
  assert.deepEqual(q.toDtype("f32").toFloat32Array(), want);
});

test("views and a broadcast add", () => {
  const a = Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5, 6), [2, 3]);
  const t = a.transpose(0, 1);
  assert.deepEqual(t.shape, [3, 2]);
  assert.deepEqual(t.strides, [1, 3]);
  assert.equal(t.isContiguous, false);
  assert.deepEqual(t.toFloat32Array(), f32(1, 4, 2, 5, 3, 6));
  assert.deepEqual(a.narrow(1, 1, 2).toFloat32Array(), f32(2, 3, 5, 6));
  assert.deepEqual(a.permute([1, 0]).contiguous().toFloat32Array(), f32(1, 4, 2, 5, 3, 6));
  const col = Tensor.fromFloat32Array(f32(10, 20), [2, 1]);
  const bc = col.broadcastTo([2, 3]);
  assert.deepEqual(bc.strides, [1, 0]);
  const sum = a.add(col);
  assert.deepEqual(sum.shape, [2, 3]);
  assert.deepEqual(sum.toFloat32Array(), f32(11, 12, 13, 24, 25, 26));
  assert.deepEqual(a.reshape([3, 2]).shape, [3, 2]);
});

test("matmul against a hand-computed product", () => {
  const a = Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5, 6), [2, 3]);
  const b = Tensor.fromFloat32Array(f32(7, 8, 9, 10, 11, 12), [3, 2]);
  const c = a.matmul(b);
  assert.deepEqual(c.shape, [2, 2]);
  // [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12]
  assert.deepEqual(c.toFloat32Array(), f32(58, 64, 139, 154));
});

test("ops: reductions, softmax, norms, gather, concat, lstm", () => {
  const a = Tensor.fromFloat32Array(f32(1, 5, 2, 7, 0, 7), [2, 3]);
  assert.deepEqual(a.sum(1).toFloat32Array(), f32(8, 14));
  assert.deepEqual(a.sum(0, true).shape, [1, 3]);
  assert.deepEqual(a.argmax(1).toInt32Array(), new Int32Array([1, 0]));
  const sm = Tensor.fromFloat32Array(f32(1000, -1000), [2]).softmax(0).toFloat32Array();
  assert.deepEqual(sm, f32(1, 0));
  const ids = Tensor.fromInt32Array(new Int32Array([1, 1, 0]), [3]);
  assert.deepEqual(a.gatherRows(ids).toFloat32Array(), f32(7, 0, 7, 7, 0, 7, 1, 5, 2));
  const c = Tensor.concat([a, a], 0);
  assert.deepEqual(c.shape, [4, 3]);
  assert.deepEqual(a.shape, [2, 3], "handles passed to concat stay usable");
  const z = Tensor.zeros([2]);
  const { cell, hidden } = Tensor.lstmCell(z, z, z, z, z);
  assert.deepEqual(cell.toFloat32Array(), f32(0, 0));
  assert.deepEqual(hidden.toFloat32Array(), f32(0, 0));
  const w = Tensor.fromFloat32Array(f32(1, 1, 1), [3]);
  const r = Tensor.fromFloat32Array(f32(3, 4, 0), [1, 3]).rmsNorm(w, 0).toFloat32Array();
  const rms = Math.sqrt(25 / 3);
  assert.ok(Math.abs(r[0] - 3 / rms) < 1e-6 && Math.abs(r[1] - 4 / rms) < 1e-6);
});

test("errors are thrown with a stable code and the module keeps working", () => {
  const a = Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5, 6), [2, 3]);
  const cases = [
    [() => a.matmul(a), "ShapeMismatch"],
    [() => a.add(Tensor.zeros([4])), "NotBroadcastable"],
    [() => a.transpose(0, 5), "AxisOutOfRange"],
    [() => a.narrow(1, 2, 9), "NarrowOutOfRange"],
    [() => Tensor.fromFloat32Array(f32(1, 2, 3), [2, 2]), "StorageTooSmall"],
    [() => Tensor.fromQuantized(new Uint8Array(18), "q4_0", [16]), "PartialQuantizedBlock"],
    [() => Tensor.fromQuantized(new Uint8Array(18), "q4_0", [32]).transpose(0, 0), "QuantizedElementAccess"],
    [() => Tensor.fromInt32Array(new Int32Array([1]), [1]).exp(), "DTypeMismatch"],
    [() => a.gatherRows(Tensor.fromInt32Array(new Int32Array([2]), [1])), "IndexOutOfRange"],
    [() => a.toDtype("q4_0"), "UnsupportedDType"],
    [() => a.toDtype("f64"), "InvalidArgument"],
    [() => a.reshape([2.5]), "InvalidArgument"],
    [() => Tensor.zeros([-1]), "InvalidArgument"],
    [() => Tensor.zeros([65536, 65536, 16]), "SizeOverflow"],
    [() => Tensor.zeros([16384, 16384, 3]), "AllocationFailed"],
    [() => Tensor.concat([a, "nope"], 0), "InvalidArgument"],
  ];
  for (const [fn, code] of cases) {
    assert.throws(fn, (e) => {
      assert.ok(e instanceof Error);
      assert.equal(e.code, code, `${e.message}`);
      assert.ok(e.message.length > 10);
      return true;
    });
  }
  // Still alive after all of that.
  assert.deepEqual(a.mul(a).toFloat32Array(), f32(1, 4, 9, 16, 25, 36));
});
