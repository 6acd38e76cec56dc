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
