"""Protocols: which set folds a recording.

``_detect`` tells which protocol a recording speaks and gives its
``definitions.ProtocolSet`` (or loads one named by ``--definitions``; a set drives
its own pre-pass, batch or one event at a time); ``_unclaimed`` says so when a
conversation's events go to no definition.

May import: ``replay.logs``, ``replay._replay``, ``replay._errors``, ``engine``,
``definitions``.
"""
