"""Django's PostgreSQL backend, with a pooled connection checked as it is lent (issue 28).

After a PostgreSQL restart every connection the pool holds is dead, and each used to cost the
request it was lent to a 503. psycopg_pool can check a connection before lending it (Django
passes `check=ConnectionPool.check_connection` when CONN_HEALTH_CHECKS is set), but between two
failed checks it sleeps 1 s, then 2 s, 4 s...: with 4 dead connections the first request after
the restart took 3.2 s, with the pool's 10 it would pass its 10 s timeout (a 503 again). Here a
failed check drains the pool, so the dead connections are replaced at once, and the request
takes a connection once more without sleeping.
"""

from __future__ import annotations

import psycopg
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        if self.pool is None:
            return connection
        try:
            ConnectionPool.check_connection(connection)  # one empty round trip
        except psycopg.Error:
            # The server went away with every connection of the pool (a restart, a failover):
            # replace them all, not one per request, and take a fresh one.
            self.pool.putconn(connection)
            self.pool.drain()
            connection = super().get_new_connection(conn_params)
        return connection
