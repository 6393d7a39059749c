"""Tamper evidence and its verification: seals and per-game chains written with each save
(``append``, ``models``, ``canonical``, ``merkle``), the stored tree (``store``), signed
checkpoints and their block hashes, inclusion and consistency proofs, and ``verify`` with the
deal, snapshot and resealed-edit checks (``verify``, ``deal_checks``, ``snapshot_checks``,
``locate``), and the remembered replays that spare a game's badge a replay on every view
(``replay_memos``); ``evidence`` is the entry point the commands and pages use.
"""
