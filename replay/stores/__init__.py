"""Stores: where many processes append to and follow the same conversations.

``_sqlite`` is the embedded store (``SQLiteStore``, one file in WAL mode);
``_postgres`` the shared one (``PostgresStore``); ``_open`` tells them apart by
name (``open_store``) and gives each store's change feed; ``_worker`` runs the
projection workers that keep every conversation's published view current.

May import: ``replay.logs``, ``replay.render`` (a worker publishes rendered views),
``replay._errors``, ``engine``, ``definitions``.
"""
