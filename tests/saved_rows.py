"""Every row the projection would write for games saved whole, for comparing the counted
path (``Variant.saved_move_rows``) with the replay (``GameProjection(light=False)``)."""

from __future__ import annotations


def projected(projection, pairs) -> dict:
    """Every row ``projection`` would write for ``pairs`` (game, its events)."""
    batch = projection.rows_of_new_games(pairs)
    games = {}
    for game_id, game in batch.touched.items():
        variant = batch.variant[game_id]
        row = {**variant.started_row(game), **variant.progress_row(game)}
        row.update(batch.closing.get(game_id, {}))
        if game_id in batch.audit:
            row.update(projection._audit_row(game, variant, batch.events.get(game_id)))
        games[game_id] = row
    return {
        "games": games,
        "created": sorted(batch.created),
        "moves": batch.moves,
        "results": batch.results,
        "entries": batch.entries,
    }
