"""A reader of pprof profiles (google/pprof ``proto/profile.proto``), in pure Python.

A pprof profile is a protobuf message (``perftools.profiles.Profile``), gzipped on disk.
tlview reads it with this small reader of the protobuf wire format instead of depending on
the ``protobuf`` package: it decodes the fields of profile.proto it knows (by number and
wire type) and counts the others, never reads past a message's bytes, and turns anything
that breaks the format (a varint or a length running past its message, a wire type that
field cannot have, an index outside the string table, a sample naming a location that is
not there) into one ``ProtoError`` naming the byte offset and what was expected.

Only what the public proto defines is read: sample types, samples (location ids, values,
labels), locations (their lines), functions, the string table, time and duration, period,
comments, the default sample type. Mappings are counted, not kept (a device memory
profile has none).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from attrs import frozen

_U64 = 1 << 64
_I64 = 1 << 63

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


class ProtoError(Exception):
    """Bad bytes: ``offset`` in the un-gzipped message, and what was expected there."""

    def __init__(self, offset: int, message: str) -> None:
        self.offset = offset
        self.message = message
        super().__init__(f"byte {offset}: {message}")


@frozen
class Label:
    key: str
    text: str | None  # the proto's ``str``
    num: int | None
    num_unit: str | None


@frozen
class Sample:
    location_ids: tuple[int, ...]  # leaf first
    values: tuple[int, ...]
    labels: tuple[Label, ...]
    offset: int  # where the sample's message begins (for messages)


@frozen
class Function:
    name: str
    system_name: str
    filename: str
    start_line: int


@frozen
class Line:
    function_id: int
    line: int


@frozen
class Profile:
    sample_types: tuple[tuple[str, str], ...]  # (type, unit)
    samples: tuple[Sample, ...]
    locations: dict[int, tuple[Line, ...]]  # location id -> its lines, innermost first
    functions: dict[int, Function]
    time_nanos: int
    duration_nanos: int
    period_type: tuple[str, str] | None
    period: int
    comments: tuple[str, ...]
    default_sample_type: str
    mappings: int
    unknown_fields: dict[str, int]  # "Message.N" -> how many times the field came


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` (unsigned, at most 10 bytes) and the position after it."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise ProtoError(start, "a varint runs past the end of its message: "
                             "expected a complete varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:
            raise ProtoError(start, "a varint longer than 10 bytes: expected at most 10")
    return result & (_U64 - 1), pos


def _signed(v: int) -> int:
    """An int64 field's value (two's complement of the 64-bit varint)."""
    return v - _U64 if v >= _I64 else v


def fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, Any, int]]:
    """The fields of the message in ``buf[pos:end]``: (number, wire type, value, offset);
    value is an int for VARINT/I64/I32, a (start, end) pair for LEN."""
    while pos < end:
        at = pos
        tag, pos = read_varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ProtoError(at, "field number 0: expected a field tag")
        if wire == VARINT:
            value, pos = read_varint(buf, pos, end)
            yield number, wire, value, at
        elif wire == LEN:
            n, pos = read_varint(buf, pos, end)
            if n > end - pos:
                raise ProtoError(at, f"field {number} says {n} bytes, {end - pos} are left "
                                 "in its message: expected the whole field (truncated?)")
            yield number, wire, (pos, pos + n), at
            pos += n
        elif wire == I64 or wire == I32:
            n = 8 if wire == I64 else 4
            if n > end - pos:
                raise ProtoError(at, f"field {number} needs {n} bytes, {end - pos} are left: "
                                 "expected the whole field (truncated?)")
            yield number, wire, int.from_bytes(buf[pos:pos + n], "little"), at
            pos += n
        else:
            raise ProtoError(at, f"field {number} has wire type {wire} (a group or no type):"
                             " expected a varint, fixed or length-delimited field")


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.unknown: dict[str, int] = {}

    def skip(self, message: str, number: int) -> None:
        k = f"{message}.{number}"
        self.unknown[k] = self.unknown.get(k, 0) + 1

    def ints(self, wire: int, value: Any, at: int, what: str) -> list[int]:
        """A repeated integer field: one varint, or a packed run of them."""
        if wire == VARINT:
            return [value]
        if wire == LEN:
            lo, hi = value
            out = []
            while lo < hi:
                v, lo = read_varint(self.buf, lo, hi)
                out.append(v)
            return out
        raise ProtoError(at, f"{what} with wire type {wire}: expected varints")

    def varint(self, wire: int, value: Any, at: int, what: str) -> int:
        if wire != VARINT:
            raise ProtoError(at, f"{what} with wire type {wire}: expected a varint")
        return int(value)

    def span(self, wire: int, value: Any, at: int, what: str) -> tuple[int, int]:
        if wire != LEN:
            raise ProtoError(at, f"{what} with wire type {wire}: expected a message")
        return value[0], value[1]

    def value_type(self, lo: int, hi: int) -> tuple[int, int, int]:
        t = u = 0
        for number, wire, value, at in fields(self.buf, lo, hi):
            if number == 1:
                t = _signed(self.varint(wire, value, at, "ValueType.type"))
            elif number == 2:
                u = _signed(self.varint(wire, value, at, "ValueType.unit"))
            else:
                self.skip("ValueType", number)
        return t, u, lo

    def sample(self, lo: int, hi: int) -> tuple[list[int], list[int], list[tuple[int, ...]], int]:
        locs: list[int] = []
        values: list[int] = []
        labels: list[tuple[int, ...]] = []
        for number, wire, value, at in fields(self.buf, lo, hi):
            if number == 1:
                locs.extend(self.ints(wire, value, at, "Sample.location_id"))
            elif number == 2:
                values.extend(_signed(v) for v in self.ints(wire, value, at, "Sample.value"))
            elif number == 3:
                a, b = self.span(wire, value, at, "Sample.label")
                key = s = num = unit = 0
                for n2, w2, v2, at2 in fields(self.buf, a, b):
                    if n2 in (1, 2, 3, 4):
                        v = _signed(self.varint(w2, v2, at2, f"Label field {n2}"))
                        if n2 == 1:
                            key = v
                        elif n2 == 2:
                            s = v
                        elif n2 == 3:
                            num = v
                        else:
                            unit = v
                    else:
                        self.skip("Label", n2)
                labels.append((key, s, num, unit, a))
            else:
                self.skip("Sample", number)
        return locs, values, labels, lo

    def location(self, lo: int, hi: int) -> tuple[int, list[tuple[int, int, int]], int]:
        lid = 0
        lines: list[tuple[int, int, int]] = []
        for number, wire, value, at in fields(self.buf, lo, hi):
            if number == 1:
                lid = self.varint(wire, value, at, "Location.id")
            elif number == 4:
                a, b = self.span(wire, value, at, "Location.line")
                fid = line = 0
                for n2, w2, v2, at2 in fields(self.buf, a, b):
                    if n2 == 1:
                        fid = self.varint(w2, v2, at2, "Line.function_id")
                    elif n2 == 2:
                        line = _signed(self.varint(w2, v2, at2, "Line.line"))
                    else:
                        self.skip("Line", n2)
                lines.append((fid, line, a))
            elif number in (2, 3, 5):
                self.varint(wire, value, at, f"Location field {number}")
            else:
                self.skip("Location", number)
        return lid, lines, lo

    def function(self, lo: int, hi: int) -> tuple[int, list[int], int]:
        fid = 0
        vals = [0, 0, 0, 0]  # name, system_name, filename, start_line
        for number, wire, value, at in fields(self.buf, lo, hi):
            if number == 1:
                fid = self.varint(wire, value, at, "Function.id")
            elif 2 <= number <= 5:
                vals[number - 2] = _signed(self.varint(wire, value, at, f"Function field {number}"))
            else:
                self.skip("Function", number)
        return fid, vals, lo


def parse_profile(buf: bytes) -> Profile:
    """The Profile message in ``buf`` (un-gzipped), checked: every string index inside the
    string table, every location a sample names and every function a line names present,
    ids unique, every sample with one value per sample type."""
    r = _Reader(buf)
    strings: list[str] = []
    sample_types: list[tuple[int, int, int]] = []
    raw_samples = []
    raw_locations = []
    raw_functions = []
    scalars = {7: 0, 8: 0, 9: 0, 10: 0, 12: 0, 14: 0, 15: 0}
    period_type: tuple[int, int, int] | None = None
    comments: list[tuple[int, int]] = []
    mappings = 0
    end = len(buf)
    for number, wire, value, at in fields(buf, 0, end):
        if number == 1:
            sample_types.append(r.value_type(*r.span(wire, value, at, "Profile.sample_type")))
        elif number == 2:
            raw_samples.append(r.sample(*r.span(wire, value, at, "Profile.sample")))
        elif number == 3:
            r.span(wire, value, at, "Profile.mapping")
            mappings += 1
        elif number == 4:
            raw_locations.append(r.location(*r.span(wire, value, at, "Profile.location")))
        elif number == 5:
            raw_functions.append(r.function(*r.span(wire, value, at, "Profile.function")))
        elif number == 6:
            lo, hi = r.span(wire, value, at, "Profile.string_table")
            try:
                strings.append(buf[lo:hi].decode("utf-8"))
            except UnicodeDecodeError:
                raise ProtoError(at, "a string of the string table is not UTF-8: expected "
                                 "UTF-8 text") from None
        elif number in scalars:
            scalars[number] = _signed(r.varint(wire, value, at, f"Profile field {number}"))
        elif number == 11:
            period_type = r.value_type(*r.span(wire, value, at, "Profile.period_type"))
        elif number == 13:
            comments.extend((_signed(v), at) for v in r.ints(wire, value, at, "Profile.comment"))
        else:
            r.skip("Profile", number)

    def s(i: int, at: int, what: str) -> str:
        if not 0 <= i < len(strings):
            raise ProtoError(at, f"{what} names string {i}, the string table has "
                             f"{len(strings)}: expected an index inside it")
        return strings[i]

    if strings and strings[0] != "":
        raise ProtoError(0, "string_table[0] is not empty: expected \"\" first (profile.proto)")
    types = tuple((s(t, at, "a sample type"), s(u, at, "a sample type's unit"))
                  for t, u, at in sample_types)
    functions: dict[int, Function] = {}
    for fid, (name, system, filename, start), at in raw_functions:
        if fid == 0 or fid in functions:
            raise ProtoError(at, f"function id {fid} {'again' if fid else ''}: expected a "
                             "unique nonzero id")
        functions[fid] = Function(s(name, at, "a function's name"),
                                  s(system, at, "a function's system name"),
                                  s(filename, at, "a function's filename"), start)
    locations: dict[int, tuple[Line, ...]] = {}
    for lid, lines, at in raw_locations:
        if lid == 0 or lid in locations:
            raise ProtoError(at, f"location id {lid} {'again' if lid else ''}: expected a "
                             "unique nonzero id")
        for fid, _line, lat in lines:
            if fid not in functions:
                raise ProtoError(lat, f"a line of location {lid} names function {fid}, which "
                                 "the profile does not define: expected a defined function")
        locations[lid] = tuple(Line(fid, line) for fid, line, _ in lines)
    samples = []
    for locs, values, labels, at in raw_samples:
        for lid in locs:
            if lid not in locations:
                raise ProtoError(at, f"a sample names location {lid}, which the profile does "
                                 "not define: expected a defined location")
        if len(values) != len(types):
            raise ProtoError(at, f"a sample with {len(values)} values for {len(types)} sample "
                             "types: expected one value per sample type")
        samples.append(Sample(
            tuple(locs), tuple(values),
            tuple(Label(s(k, la, "a label's key"), s(v, la, "a label's text") if v else None,
                        n if not v else None, s(u, la, "a label's unit") if u else None)
                  for k, v, n, u, la in labels), at))
    pt = None if period_type is None else (s(period_type[0], period_type[2], "the period type"),
                                           s(period_type[1], period_type[2], "its unit"))
    return Profile(
        sample_types=types, samples=tuple(samples), locations=locations, functions=functions,
        time_nanos=scalars[9], duration_nanos=scalars[10], period_type=pt,
        period=scalars[12], comments=tuple(s(c, at, "a comment") for c, at in comments),
        default_sample_type=s(scalars[14], 0, "default_sample_type"), mappings=mappings,
        unknown_fields=r.unknown)


def looks_like_profile(head: bytes) -> bool:
    """Does ``head`` (a file's first bytes, un-gzipped) begin a pprof Profile? Its first
    field is a sample type (field 1: a small message of varints 1 and 2), and every
    complete field of the head has the number and wire type profile.proto gives it."""
    allowed = {1: LEN, 2: LEN, 3: LEN, 4: LEN, 5: LEN, 6: LEN, 7: VARINT, 8: VARINT,
               9: VARINT, 10: VARINT, 11: LEN, 12: VARINT, 13: None, 14: VARINT,
               15: VARINT, 16: LEN}
    pos, end, first = 0, len(head), True
    try:
        while pos < end:
            tag, p = read_varint(head, pos, end)
            number, wire = tag >> 3, tag & 7
            if number not in allowed or (allowed[number] is not None and wire != allowed[number]):
                return False
            if wire == VARINT:
                _, p = read_varint(head, p, end)
            elif wire == LEN:
                n, p = read_varint(head, p, end)
                if first:
                    if number != 1 or n > 22 or n > end - p:
                        return False
                    for f_number, f_wire, _, _ in fields(head, p, p + n):
                        if f_number not in (1, 2) or f_wire != VARINT:
                            return False
                p += n
            else:
                return False
            first = False
            pos = p
    except ProtoError:
        return pos > 0  # the head ends inside a field: what came before was a profile
    return not first
