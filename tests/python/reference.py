"""Inputs and expected results, computed independently of the library with
NumPy: exact small integers in every data type (as nccl-tests does), so every
result is compared exactly, except Avg of floating types (one rounding).

bfloat16 has no NumPy type: it travels as uint16 bit patterns with
dtype='bfloat16', and is converted here with our own round-to-nearest-even.
"""
import numpy as np

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float16", "bfloat16", "float32", "float64"]
ALL_TYPES = INT_TYPES + FLOAT_TYPES
OPS = ["sum", "prod", "max", "min", "avg"]
# Relative size of one rounding, for Avg of floating types.
ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
       "float64": 2.0 ** -52}


def np_type(name):
    """The NumPy array type and the dtype= to pass to the library."""
    if name == "bfloat16":
        return np.uint16, "bfloat16"
    return np.dtype(name), None


def bf16_bits(values):
    f = np.asarray(values, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def values(name, rank, count, salt=0):
    """Exact small integers as float64: 1..3 for unsigned types, -2..3 for
    signed and floating ones (products of up to 4 ranks stay exact in
    int8, and in bfloat16's 8 significant bits)."""
    i = np.arange(count)
    if name.startswith("u"):
        return ((rank * 3 + i + salt) % 3 + 1).astype(np.float64)
    return np.array([-2, -1, 1, 2, 3], np.float64)[(rank * 3 + i + salt) % 5]


def encode(name, vals):
    """float64 values -> the array handed to the library."""
    if name == "bfloat16":
        return bf16_bits(vals)
    return np.asarray(vals).astype(np.dtype(name))


def decode(name, arr):
    """Array from the library -> float64 values."""
    if name == "bfloat16":
        return bf16_value(arr).astype(np.float64)
    return np.asarray(arr).astype(np.float64)


def reduce_ref(name, op, per_rank):
    """Expected result of reducing the float64 rows `per_rank`."""
    m = np.stack(per_rank)
    n = m.shape[0]
    if op == "sum":
        return m.sum(0)
    if op == "prod":
        return m.prod(0)
    if op == "max":
        return m.max(0)
    if op == "min":
        return m.min(0)
    s = m.sum(0)
    if name in INT_TYPES:  # C division: truncation toward zero
        return np.sign(s) * (np.abs(s) // n)
    return s / n


def compare(name, op, got_arr, expected, label, errors):
    got = decode(name, got_arr)
    exp = np.asarray(expected, np.float64)
    if op == "avg" and name in FLOAT_TYPES:
        ok = np.all(np.abs(got - exp) <= np.abs(exp) * ULP[name] + 1e-300)
    else:
        ok = got.shape == exp.shape and np.array_equal(got, exp)
    if not ok:
        errors.append("%s: got %s, expected %s" % (label, got.tolist()[:8], exp.tolist()[:8]))
