"""Plain SQL for the few statements that every send and every run executes.

Building a queryset (filters, expressions, the compiler) costs Django 0.3–1 ms of Python per
statement, often more than PostgreSQL spends executing it; on the run path that was a fifth of a
worker's CPU (BENCHMARKS.md, "sessions_send round trip"). These helpers keep the ORM's value
conversion (`get_db_prep_save`: UUIDs, JSON, datetimes on both backends) and drop the rest.
Everything else keeps using the ORM.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models

from . import jsontext


def table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(name: str) -> str:
    return connection.ops.quote_name(name)


def prep(model, field_name: str, value: Any) -> Any:
    """`value` as the database adapter wants it for `model.field_name`."""
    return model._meta.get_field(field_name).get_db_prep_save(value, connection)


def greatest() -> str:
    """SQL's two-argument maximum on this backend."""
    return "GREATEST" if connection.vendor == "postgresql" else "MAX"


def update(model, values: dict[str, Any], where: str, params: list, *, extra_sets=()) -> int:
    """UPDATE model SET values (prepared per field) [, extra_sets] WHERE where; the row count.

    `extra_sets` are (sql, params) pairs for expressions such as `changed_ms = …`.
    """
    sets = [f"{column(model._meta.get_field(name).column)} = %s" for name in values]
    args = [prep(model, name, value) for name, value in values.items()]
    for sql, sql_params in extra_sets:
        sets.append(sql)
        args.extend(sql_params)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table(model)} SET {', '.join(sets)} WHERE {where}", [*args, *params]
        )
        return cursor.rowcount


def fetchall(sql: str, params: Sequence[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class ModelColumns:
    """Columns of `model` (every concrete one, or `fields` by name) under the table alias
    `alias`, for a plain SELECT, and what one row's slice of them makes: the model instance
    (build) or the values (values), converted as the ORM converts them (JSON decoded, SQLite's
    booleans, UUIDs and datetimes). For joins the ORM cannot express (a row with the singleton
    settings row beside it) and for the few statements every request sends, where building
    the queryset and compiling it cost more than PostgreSQL spends running it.

    The converters are found once per backend (the ORM finds them again for every statement);
    a JSON column without a custom decoder is read by jsontext.loads, exact as json.loads and
    mostly orjson. (SQLite's converters are methods of the first connection's `ops`; they read
    nothing of it that differs between connections.)"""

    def __init__(self, model, alias: str, fields: tuple[str, ...] | None = None):
        self.model = model
        self.alias = alias
        self.fields = (
            tuple(model._meta.concrete_fields)
            if fields is None
            else tuple(model._meta.get_field(name) for name in fields)
        )
        self.attnames = [f.attname for f in self.fields]
        self._converters: dict[str, list] = {}

    def __len__(self) -> int:
        return len(self.fields)

    @functools.cached_property
    def sql(self) -> str:
        # Both backends quote names alike ("name"); built on first use, once.
        return ", ".join(f"{self.alias}.{column(f.column)}" for f in self.fields)

    def _converters_now(self) -> list:
        found = self._converters.get(connection.vendor)
        if found is None:
            found = []
            for i, field in enumerate(self.fields):
                col = field.get_col(self.alias)
                functions = connection.ops.get_db_converters(col)
                if isinstance(field, models.JSONField) and field.decoder is None:
                    functions = [*functions, _json_value]
                else:
                    functions = [*functions, *col.get_db_converters(connection)]
                if functions:
                    found.append((i, functions, col))
            self._converters[connection.vendor] = found
        return found

    def values(self, row: tuple | list) -> Sequence[Any]:
        """`row` (these columns, in `sql`'s order) converted."""
        return self.rows([row])[0]

    def rows(self, found: list) -> Sequence[Sequence[Any]]:
        """Every row of `found` converted (the converters looked up once for all of them)."""
        converters = self._converters_now()
        db = connections[DEFAULT_DB_ALIAS]
        if connection.vendor == "postgresql":
            # The jsonb columns of every row in one decoding call (decode_json); psycopg has
            # already converted the rest, which have no other converter there.
            json_at = tuple(i for i, fs, _ in converters if fs == [_json_value])
            if len(json_at) == len(converters):
                return decode_json(found, json_at)
        converted: list[Sequence[Any]] = []
        for row in found:
            values = list(row)
            for i, functions, col in converters:
                value = values[i]
                if value is not None or len(functions) > 1 or functions[0] is not _json_value:
                    for convert in functions:
                        value = convert(value, col, db)
                    values[i] = value
            converted.append(values)
        return converted

    def build(self, row: tuple | list):
        """The model instance of `row` (in `sql`'s order; the fields not read are deferred)."""
        return self.model.from_db(connection.alias, self.attnames, self.values(row))


def decode_json(found: list, positions: tuple[int, ...]) -> list[tuple]:
    """The rows of `found` as tuples, their text at `positions` (jsonb as a plain PostgreSQL
    cursor returns it, or NULL) decoded as jsontext.loads does: column by column, each column
    in one jsontext.loads_many call, the rows taken apart and put together again by zip (in C:
    no Python step per cell, issue 26)."""
    if not found or not positions:
        return [tuple(row) for row in found]
    columns: list[Sequence[Any]] = list(zip(*found, strict=True))
    for i in positions:
        columns[i] = jsontext.loads_many(columns[i])
    return list(zip(*columns, strict=True))


def _json_value(value, expression, connection):
    # What JSONField.from_db_value does for a plain column, with jsontext.loads.
    return value if value is None else jsontext.loads(value)


_READERS: dict[tuple, ModelColumns] = {}


def first(model, where: str, params: list, *, fields: tuple[str, ...] | None = None):
    """The first `model` row WHERE `where` (columns as `t.<column>`), or None: `.filter().first()`
    (`.only(*fields)` with `fields`, the pk always read) without building and compiling a
    queryset, and without its ORDER BY pk: `where` should name at most one row."""
    columns = _READERS.get((model, fields))
    if columns is None:
        wanted = None if fields is None else (model._meta.pk.name, *fields)
        columns = _READERS[(model, fields)] = ModelColumns(model, "t", wanted)
    found = fetchall(f"SELECT {columns.sql} FROM {table(model)} t WHERE {where} LIMIT 1", params)
    return columns.build(found[0]) if found else None
