"""Hypothesis strategies for values of a contract's type, read from msgspec's own account of
it (`msgspec.inspect`): every field, its constraints and bounds, so the values come to the
edges (the shortest and longest strings, the least and greatest numbers, the emptiest and
fullest lists), as a decoder sees them."""

from datetime import UTC
from functools import cache
from typing import Any

import hypothesis.strategies as st
import msgspec.inspect as mi

__all__ = ["values_of"]


def values_of(type_: Any) -> st.SearchStrategy[Any]:
    """Values that `msgspec.json.encode` writes as a valid `type_`."""
    return _of(mi.type_info(type_))


@cache
def _struct(cls: type) -> st.SearchStrategy[dict[str, Any]]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    required = {f.encode_name: _of(f.type) for f in info.fields if f.required}
    optional = {f.encode_name: _of(f.type) for f in info.fields if not f.required}
    tag = {info.tag_field: st.just(info.tag)} if info.tag_field else {}
    return st.fixed_dictionaries({**required, **tag}, optional=optional)


def _of(info: mi.Type) -> st.SearchStrategy[Any]:
    match info:
        case mi.Metadata():
            return _of(info.type)
        case mi.StructType() | mi.DataclassType() | mi.TypedDictType():
            if isinstance(info, mi.StructType):
                return st.deferred(lambda: _struct(info.cls))
            return st.fixed_dictionaries(
                {f.encode_name: _of(f.type) for f in info.fields if f.required},
                optional={f.encode_name: _of(f.type) for f in info.fields if not f.required},
            )
        case mi.NoneType():
            return st.none()
        case mi.BoolType():
            return st.booleans()
        case mi.IntType():
            low = info.ge if info.gt is None else info.gt + 1
            high = info.le if info.lt is None else info.lt - 1
            return st.integers(low, high)
        case mi.FloatType():
            return st.floats(
                min_value=info.ge if info.ge is not None else info.gt,
                max_value=info.le if info.le is not None else info.lt,
                exclude_min=info.gt is not None,
                exclude_max=info.lt is not None,
                allow_nan=False,
                allow_infinity=False,
            )
        case mi.StrType():
            return _text(info)
        case mi.BytesType() | mi.ByteArrayType() | mi.MemoryViewType():
            return st.binary(min_size=info.min_length or 0, max_size=info.max_length or 64)
        case mi.DateTimeType():
            zones = st.just(UTC) if info.tz is not False else st.none()
            return st.datetimes(timezones=zones)
        case mi.DateType():
            return st.dates()
        case mi.TimeType():
            return st.times()
        case mi.TimeDeltaType():
            return st.timedeltas()
        case mi.DecimalType():
            return st.decimals(allow_nan=False, allow_infinity=False, places=2)
        case mi.UUIDType():
            return st.uuids()
        case mi.LiteralType():
            return st.sampled_from(info.values)
        case mi.EnumType():
            return st.sampled_from([m.value for m in info.cls])
        case mi.UnionType():
            return st.one_of([_of(t) for t in info.types])
        case mi.ListType() | mi.SetType() | mi.FrozenSetType() | mi.VarTupleType():
            return st.lists(
                _of(info.item_type),
                min_size=info.min_length or 0,
                max_size=info.max_length if info.max_length is not None else 4,
                unique=not isinstance(info, (mi.ListType, mi.VarTupleType)),
            )
        case mi.TupleType():
            return st.tuples(*(_of(t) for t in info.item_types))
        case mi.DictType():
            return st.dictionaries(
                _of(info.key_type),
                _of(info.value_type),
                min_size=info.min_length or 0,
                max_size=info.max_length if info.max_length is not None else 4,
            )
        case mi.AnyType():
            return st.none() | st.booleans() | st.integers() | st.text(max_size=16)
    raise TypeError(f"no strategy for {info!r}")


def _text(info: mi.StrType) -> st.SearchStrategy[str]:
    low, high = info.min_length or 0, info.max_length
    if info.pattern is None:
        return st.text(min_size=low, max_size=high if high is not None else 64)
    return st.from_regex(info.pattern, fullmatch=True).filter(
        lambda s: low <= len(s) and (high is None or len(s) <= high)
    )
