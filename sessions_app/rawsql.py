"""Plain SQL for the few statements that every send and every run executes.

Building a queryset (filters, expressions, the compiler) costs Django 0.3–1 ms of Python per
statement, often more than PostgreSQL spends executing it; on the run path that was a fifth of a
worker's CPU (BENCHMARKS.md, "sessions_send round trip"). These helpers keep the ORM's value
conversion (`get_db_prep_save`: UUIDs, JSON, datetimes on both backends) and drop the rest.
Everything else keeps using the ORM.
"""

from __future__ import annotations

from typing import Any

from django.db import connection


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


def fetchall(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class ModelColumns:
    """Every concrete column of `model` under the table alias `alias`, for a plain SELECT that
    reads several models' rows at once (a join the ORM cannot express, such as a row with the
    singleton settings row beside it), and the instance one row's slice of them makes, its
    values converted as the ORM converts them (JSON decoded, SQLite's booleans and datetimes).

    The converters are found once per backend: the ORM finds them again for every statement."""

    def __init__(self, model, alias: str):
        self.model = model
        self.alias = alias
        self.fields = tuple(model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self._converters: dict[str, list] = {}

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def sql(self) -> str:
        return ", ".join(f"{self.alias}.{column(f.column)}" for f in self.fields)

    def _converters_now(self) -> list:
        found = self._converters.get(connection.vendor)
        if found is None:
            found = []
            for i, field in enumerate(self.fields):
                col = field.get_col(self.alias)
                functions = connection.ops.get_db_converters(col) + col.get_db_converters(
                    connection
                )
                if functions:
                    found.append((i, functions, col))
            self._converters[connection.vendor] = found
        return found

    def build(self, values: tuple | list):
        """The model instance of `values` (this model's columns, in `sql`'s order)."""
        values = list(values)
        for i, functions, col in self._converters_now():
            value = values[i]
            for convert in functions:
                value = convert(value, col, connection)
            values[i] = value
        return self.model.from_db(connection.alias, self.attnames, values)
