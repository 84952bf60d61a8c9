"""Protocols: which definition set folds a recording, and driving its pre-pass.

``_detect`` tells which protocol a recording speaks and builds its
``DefinitionSet`` (or loads one named by ``--definitions``); ``_feed`` runs a set's
pre-pass one event at a time for views that grow; ``_unclaimed`` says so when a
conversation's events go to no definition.

May import: ``replay.logs``, ``replay._replay``, ``replay._errors``, ``engine``,
``definitions``.
"""
