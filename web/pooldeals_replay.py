"""The pages of a Pool or Deals Rummy match: the match view and every deal move by move.

The replay, audit and summary routes (:mod:`web.views`) hand a match over to these functions
because the match's variant names this module (``Variant.web_pages``), so the permalink is
a 13-card game's: ``/games/<id>/replay?move=17&seat=p2``. ``move`` counts the match's steps
applied (0: seated, nothing dealt), as the live API's ``seq`` and a dispute's move do: each
deal, each 13-card move, each rejoin and the split is a step of its own. Beside the deal's table, drawn as the 13-card replay draws it
(:mod:`web.svg`), stands the match so far: the score (pool) or chip (deals) table after
every deal, eliminations, drops left, rejoins and the split with their arithmetic.

Nothing here decides a rule: scores, drops, rejoin scores and shares come from the
match's events (``domain.pooldeals``); this module only lays them out.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_DOWN, Decimal

from flask import Response, abort, redirect, render_template, url_for
from markupsafe import Markup

from domain import variants
from domain.money import money_text
from domain.pooldeals.match import Match
from domain.pooldeals.profile import pool_type
from domain.pooldeals.state import MatchTableState
from domain.rummy13.profiles import get_profile
from domain.seat_view import table_for_view
from web import svg
from web.audit_marks import figure_rows, flatten
from web.case_views import AroundMove, CaseView, around
from web.ledger import get_ledger
from web.moves import describe as describe_move
from web.replay_page import _seat_drawing, scored_hands
from web.step_args import seat_arg, step_arg, step_urls
from web.step_states import step_states

PAISA = Decimal("0.01")
PHASE_WORDS = {
    "dealing": "between deals",
    "playing": "in play",
    "showing": "declared: losers show their hands",
    "settled": "deal over",
    "finished": "match over",
}


def _states():
    return step_states("match_timelines")


# -- words --------------------------------------------------------------------------------


def describe(step: dict, viewer: str | None = None, match: Match | None = None) -> str:
    """A step in words: ``deal 2 dealt by p3``, ``p4 rejoins``, ``p1 discards 9♣``."""
    kind = step.get("type")
    if kind == "deal":
        number = step["deal"]
        dealer = match.deals[number - 1]["dealer"] if match is not None else None
        return f"deal {number} dealt" + (f" by {dealer}" if dealer else "")
    if kind == "rejoin":
        return f"{step['player']} rejoins, paying the entry fee again"
    if kind == "split":
        return f"split agreed by {', '.join(step['accepted_by'])}"
    return describe_move({k: v for k, v in step.items() if k != "deal"}, viewer)


def format_words(match: Match) -> str:
    config = match.config
    if config.variant == "pool":
        return f"{config.pool} pool"
    return f"best of {config.deals} deals"


# -- the match so far ---------------------------------------------------------------------


def score_rows(state: MatchTableState, players) -> list[dict]:
    """The score (or chip) table after every deal scored so far, with the rejoins made
    before each deal as rows of their own."""
    pool = state.variant == "pool"
    limits = pool_type(state.pool) if pool else None
    rejoins: dict[int, list[dict]] = {}
    for entry in state.rejoins:
        rejoins.setdefault(entry["before_deal"], []).append(entry)
    rows = []
    for result in state.score_table:
        number = result["number"]
        for entry in rejoins.get(number, ()):
            rows.append({"kind": "rejoin", **entry})
        cells = []
        for player in players:
            if player in result["after"]:
                after = result["after"][player]
                points = result["points"].get(player, 0)
                cell = {
                    "in": True,
                    "points": points,
                    "after": after,
                    "won": player == result["winner"],
                    "eliminated": player in result.get("eliminated", ()),
                }
                if pool:
                    cell["drops"] = limits.drops(after) if after < limits.limit else None
                else:
                    cell["given"] = result["given"].get(player)
                    cell["short"] = result["shortfalls"].get(player)
                    if player == result["winner"]:
                        cell["received"] = sum(result["given"].values())
            else:
                cell = {"in": False}
            cells.append(cell)
        rows.append({"kind": "deal", "number": number, "winner": result["winner"], "cells": cells})
    for entry in rejoins.get(len(state.score_table) + 1, ()):
        rows.append({"kind": "rejoin", **entry})
    return rows


def rejoin_lines(state: MatchTableState, match: Match) -> list[Markup]:
    """Each rejoin with its arithmetic: the highest score among the players still in (a
    rejoin made just before counts for the next) + 1, and the entry fee paid again."""
    config = match.config
    remaining = dict.fromkeys(config.players, 0)
    rejoins: dict[int, list[dict]] = {}
    for entry in state.rejoins:
        rejoins.setdefault(entry["before_deal"], []).append(entry)
    lines = []
    for number in range(1, len(state.score_table) + 2):
        for entry in rejoins.get(number, ()):
            highest = max(remaining.values())
            scores = ", ".join(f"{p} {v}" for p, v in remaining.items())
            # The fee carries its value for the page contract (tests/test_page_contract.py).
            lines.append(
                Markup(
                    "Before deal {}: {} rejoins at {} + 1 = {} (the highest score still in: {})"
                    ' and pays the entry fee <span data-money="{}" data-money-kind="rejoin_fee"'
                    ' data-player="{}">{}</span> {} again'
                ).format(
                    number,
                    entry["player"],
                    highest,
                    entry["score"],
                    scores,
                    config.entry_fee,
                    entry["player"],
                    money_text(config.entry_fee),
                    config.currency,
                )
            )
            remaining[entry["player"]] = entry["score"]
            remaining = {p: remaining[p] for p in config.players if p in remaining}
        if number <= len(state.score_table):
            result = state.score_table[number - 1]
            remaining.update(result["after"])
            for player in result.get("eliminated", ()):
                remaining.pop(player, None)
    return lines


def split_view(state: MatchTableState, match: Match) -> dict | None:
    """The split's arithmetic step by step (docs/rules.md §3)."""
    split = state.split
    if not split:
        return None
    config = match.config
    shares = split["shares"]
    players = list(shares)
    prize = Decimal(state.prize_pool)
    net = Decimal(split["net_pool"])
    fee = prize - net
    view = {
        "kind": split.get("kind", "drops"),
        "accepted_by": split.get("accepted_by") or [],
        "after_deal": split.get("after_deal"),
        "prize_pool": money_text(prize),
        "fee": money_text(fee),
        "fee_percent": str(config.fee_percent),
        "net_pool": money_text(net),
        "currency": config.currency,
        "shares": shares,
    }
    rest = Decimal(split["rest"])
    base = (rest / len(players)).quantize(PAISA, rounding=ROUND_DOWN) if players else PAISA
    view["rest"] = money_text(rest)
    view["equal_base"] = money_text(base)
    view["paise_left"] = int((rest - base * len(players)) / PAISA)
    order = sorted(players, key=lambda p: (state.scores[p], config.players.index(p)))
    view["paise_order"] = order[: view["paise_left"]]
    if view["kind"] == "equal":
        return view
    limits = pool_type(config.pool)
    drops = split["drops"]
    least = min(drops.values())
    view.update(
        entry_fee=money_text(config.entry_fee),
        drop_worth=split["drop_worth"],
        least=least,
        limit=limits.limit,
        first_drop=limits.first_drop,
        lines=[
            {
                "player": p,
                "score": state.scores[p],
                "drops": drops[p],
                "first": split["first"][p],
                "equal": split["equal"][p],
                "share": shares[p],
            }
            for p in players
        ],
    )
    return view


def _seat_views(deal, viewer: str | None) -> list[dict]:
    from web.hand_views import table_analyses

    profile = get_profile(deal.rules)
    # A deal is a 13-card game: its face-up hands are analysed as a Points game's are.
    analyses = table_analyses(deal, viewer, profile)
    views = []
    for s in deal.seats:
        to_play = s.player == deal.current_player and deal.phase == "playing"
        words = svg.status_words(s, to_play=to_play)
        views.append(
            {
                "player": s.player,
                "seat": s.seat,
                "status": s.status,
                "status_words": words,
                "to_play": to_play,
                "out": s.status in ("dropped", "auto_dropped", "wrong_show", "lost"),
                "misses": s.consecutive_misses,
                "caption": svg.seat_caption(s, to_play=to_play),
                "drawing": _seat_drawing(deal, s, profile),
                "analysis": analyses.get(s.player),
            }
        )
    return views


def _context(game_id: str) -> dict:
    ledger, states = get_ledger(), _states()
    match = states.game(ledger, game_id)
    if not match.steps:
        abort(404, f"Match {game_id} has not been dealt yet: there is nothing to replay.")
    total = variants.get(match.variant).last_move_number(match)
    move = step_arg(game_id, total, f"0 is before the first deal, {total} the last step")
    seat = seat_arg(game_id, match.players)
    if move == 0:
        from replays.store.timeline import state_at_step

        full = state_at_step(ledger, game_id, 0, game=match)
        caption = "the players take their seats: nothing dealt yet"
    else:
        full = states.state(ledger, game_id, move)
        caption = describe(match.steps[move - 1], seat, match)
        ended = _deal_ended_by(match, move - 1)
        if ended is not None:
            caption += f" · deal {ended['number']} won by {ended['winner']}"
    state = table_for_view(full, seat)
    deal = state.deal
    return {
        "match": match,
        "game_id": game_id,
        "players": match.players,
        "format_words": format_words(match),
        "move": move,
        "total": total,
        "seat": seat,
        "state": state,
        "deal": deal,
        "caption": caption,
        "phase_words": PHASE_WORDS,
        "seat_views": _seat_views(deal, seat) if deal is not None else [],
        "score_rows": score_rows(state, match.players),
        "rejoin_lines": rejoin_lines(state, match),
        "split": split_view(state, match),
        "svg": svg,
        "url": step_urls(game_id, seat),
    }


def _deal_ended_by(match: Match, move: int) -> dict | None:
    """The deal result step ``move`` brought about (its last 13-card move), else None."""
    step = match.steps[move]
    if step.get("type") in ("deal", "rejoin", "split"):
        return None
    number = step.get("deal")
    following = match.steps[move + 1] if move + 1 < len(match.steps) else None
    if (
        following is not None
        and following.get("type") != "deal"
        and following.get("deal") == number
    ):
        return None
    return next((r for r in match.results if r["number"] == number), None)


def _move_items(match: Match, seat: str | None) -> list[dict]:
    items = []
    for index, step in enumerate(match.steps):
        kind = step.get("type")
        items.append(
            {
                "move": index + 1,
                "deal": step.get("deal") if kind == "deal" else None,
                "between": kind in ("rejoin", "split"),
                "text": describe(step, seat, match),
                "at": step.get("at"),
            }
        )
    return items


def replay_page(game_id: str) -> str:
    match = _states().game(get_ledger(), game_id)
    if not match.steps:
        return render_template(
            "replays/match_undealt.html",
            match=match,
            game_id=game_id,
            players=match.players,
            format_words=format_words(match),
        )
    context = _context(game_id)
    items = _move_items(match, context["seat"])
    return render_template(
        "replays/match_replay.html",
        move_items=items,
        timed=any(item["at"] for item in items),
        moments=_moments(context["match"], game_id, context["seat"]),
        **context,
    )


def _moments(match: Match, game_id: str, seat: str | None) -> list:
    """Each deal's missed chances, as a 13-card replay lists its own (the seat's own in a
    seat view), at the match's steps."""
    from web.hand_views import deal_chance_moments

    return deal_chance_moments(variants.get(match.variant), game_id, match, seat)


def table_fragment(game_id: str) -> str:
    return render_template("replays/_match_table.html", **_context(game_id))


def table_image(game_id: str) -> Response:
    """The deal's table after a step as one standalone SVG image (the 13-card drawing)."""
    context = _context(game_id)
    deal = context["deal"]
    if deal is None:
        # Before the first deal the replay shows the seats taken: the image says the same.
        words = f"No deal yet: {', '.join(context['players'])} seated"
        return Response(svg.empty_table(words), mimetype="image/svg+xml")
    # The deal is the seat's view already (a player out of this deal sees it as anyone did).
    return Response(svg.table(deal), mimetype="image/svg+xml")


# -- a dispute case's view of the match ------------------------------------------------------


def _deal_at(match: Match, move: int) -> int:
    """The deal on the table after ``move`` steps (the first deal before anything is dealt)."""
    return max(1, sum(1 for step in match.steps[:move] if step.get("type") == "deal"))


def case_view(game_id: str, contested: int, seat: str | None):
    """The match around the contested move for a dispute case page (:mod:`web.case_views`):
    the moves of the deal being played at that move, labelled with the deal, and that deal's
    hands as the deal was scored (each in the groups it was charged, with its points) once
    the match scored it."""
    ledger = get_ledger()
    match = _states().game(ledger, game_id)
    last = variants.get(match.variant).last_move_number(match)
    if not match.steps:
        return CaseView(last, table_words="Nothing has been dealt yet: the players are seated.")
    number = _deal_at(match, contested)
    moves = []
    for at in around(contested, 1, last):
        step = match.steps[at - 1]
        part = step.get("deal")
        if part == number or at == contested:
            words = describe(step, seat, match)
            moves.append(AroundMove(at, words, f"deal {part}" if part else "between deals"))
    if number > len(match.results):
        return CaseView(last, moves)
    game = match.deal_game(number)
    state = game.table_state()
    # A player who was not dealt in sees the deal as anyone at the table did.
    seen = seat if seat in {s.player for s in state.seats} else None
    shown = table_for_view(state, seen)
    declared = {
        move["player"]: move["groups"]
        for move in match.deals[number - 1]["moves"]
        if move.get("type") == "declare" and move.get("groups")
    }
    hands = render_template(
        "replays/_match_scored.html",
        result=match.results[number - 1],
        column="score" if match.variant == "pool" else "chips",
        final_hands=scored_hands(shown, game.config.profile, declared, money=False),
    )
    words = (
        f"Deal {number}, the deal of the contested move, as it was scored: each hand in the "
        "groups it was charged (a wrong show as it was declared), with the reason under any "
        "group that is not one and the points it added."
    )
    return CaseView(last, moves, Markup(hands), words)


def summary_redirect(game_id: str):
    """A match's summary is its replay at the last step: the final scores and the money."""
    from replays.store.timeline import game_of

    match = game_of(get_ledger(), game_id)
    last = variants.get(match.variant).last_move_number(match)
    return redirect(url_for("replays.replay", game_id=game_id, move=last))


# -- the audit ----------------------------------------------------------------------------


def _audit(game_id: str):
    from replays.store.timeline import audit_stored

    return audit_stored(get_ledger(), game_id)


def _column(report) -> str:
    return "scores" if report.computed["variant"] == "pool" else "chips"


def _deal_field(found, number: int) -> bool:
    return found.field.startswith(f"deal {number} ")


def audit_rows(report) -> list[dict]:
    """Each deal recomputed beside the recorded figures, a mark on those that differ (the
    deal's own discrepancies, ``deal 2 points``, marked on its row)."""
    column = _column(report)
    recorded = {d["number"]: d for d in report.recorded["deals"]}
    rows = []
    for mine in report.computed["deals"]:
        theirs = recorded.get(mine["number"], {})
        marks = [d.field for d in report.discrepancies if _deal_field(d, mine["number"])]
        lines = []
        for player, after in mine[column].items():
            told = (theirs.get(column) or {}).get(player)
            lines.append(
                {
                    "player": player,
                    "points": mine["points"].get(player, 0),
                    "after": after,
                    "recorded": told,
                    "differs": told != after,
                }
            )
        rows.append(
            {"number": mine["number"], "winner": mine["winner"], "lines": lines, "marks": marks}
        )
    return rows


def _figures(outcome, column: str) -> dict:
    """A match outcome's money and final standings as flat figures, named as the audit's
    discrepancies name them (``payouts.p1``, ``chips.p2``, ``split.p1``, ``rejoins.p3``)."""
    if outcome is None:
        return {}
    flat = flatten(outcome, ("winner", "prize_pool", "fee", "net_pool", "payouts", column))
    if (outcome.get("split") or {}).get("shares"):
        flat |= flatten({"split": outcome["split"]["shares"]}, ("split",))
    rejoined: dict[str, list[int]] = {}
    for entry in outcome.get("rejoins") or ():
        rejoined.setdefault(entry["player"], []).append(entry["score"])
    return flat | flatten({"rejoins": rejoined}, ("rejoins",))


# A match's money figures by name, as the page contract's kinds (tests/test_page_contract.py):
# a payout or split share is what the ledger credits the player.
MONEY_FIGURES = {
    "prize_pool": "gross",
    "fee": "fee",
    "net_pool": "net_pool",
    "payouts": "credit",
    "split": "credit",
}


def money_figure(name: str) -> tuple[str, str | None] | None:
    """``payouts.p1`` as ``("credit", "p1")``, ``fee`` as ``("fee", None)``; None if not money."""
    figure, _, player = name.partition(".")
    kind = MONEY_FIGURES.get(figure)
    return None if kind is None else (kind, player or None)


def audit_figures(report) -> list:
    column = _column(report)
    reported = report.reported
    return figure_rows(
        _figures(report.computed, column),
        _figures(report.recorded, column),
        None if reported is None else flatten(reported, tuple(reported)),
        report.discrepancies,
        placed=lambda d: d.field.startswith("deal ") and d.field[5:6].isdigit(),
        money=money_figure,
    )


def ledger_lines(report, game_id: str) -> dict:
    """The ledger's stored entries for the match (entry fees, rejoin fees, split shares,
    prize, fee) beside the entries the recomputed settlement posts, line by line, with
    their totals: the auditor guide's step 6 on the page."""
    from replays.readmodels.models import LedgerEntryRow
    from web.ledger import read_session
    from web.queries import ledger_entries

    with read_session() as session:
        stored: list[LedgerEntryRow] = ledger_entries(session, game_id)
    computed = report.computed.get("ledger_entries") or []
    lines = []
    for index in range(max(len(stored), len(computed))):
        row = stored[index] if index < len(stored) else None
        mine = computed[index] if index < len(computed) else None
        ours = (
            None
            if row is None
            else (row.account, row.kind, money_text(row.debit), money_text(row.credit))
        )
        theirs = (
            None if mine is None else (mine["account"], mine["kind"], mine["debit"], mine["credit"])
        )
        lines.append(
            {
                "number": index + 1,
                "account": (ours or theirs)[0],
                "kind": (ours or theirs)[1],
                "debit": ours[2] if ours else "—",
                "credit": ours[3] if ours else "—",
                "recomputed": theirs,
                "differs": row is not None and row.dispute_id is None and ours != theirs,
                "case": row.dispute_id if row is not None else None,
            }
        )
    debits = sum((row.debit for row in stored), Decimal("0.00"))
    credits = sum((row.credit for row in stored), Decimal("0.00"))
    return {
        "lines": lines,
        "debits": money_text(debits),
        "credits": money_text(credits),
        "balanced": debits == credits,
    }


def audit_page(game_id: str) -> str:
    report = _audit(game_id)
    match = get_ledger().get_game(game_id)
    state = match.table_state()
    return render_template(
        "audit/match_audit.html",
        report=report,
        match=match,
        game_id=game_id,
        format_words=format_words(match),
        rows=audit_rows(report),
        figures=audit_figures(report),
        ledger=ledger_lines(report, game_id),
        column=_column(report),
        split=split_view(state, match),
        rejoin_lines=rejoin_lines(state, match),
        money_figure=money_figure,
    )


def audit_json(game_id: str) -> Response:
    body = json.dumps(_audit(game_id).to_dict(), default=str)
    response = Response(body, mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.json"'
    return response


def audit_csv(game_id: str) -> Response:
    report = _audit(game_id)
    column = "scores" if report.computed["variant"] == "pool" else "chips"
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["deal", "winner", "player", "points", column[:-1] + "_after", "recorded"])
    for row in audit_rows(report):
        for line in row["lines"]:
            writer.writerow(
                [
                    row["number"],
                    row["winner"],
                    line["player"],
                    line["points"],
                    line["after"],
                    "" if line["recorded"] is None else line["recorded"],
                ]
            )
    computed = report.computed
    writer.writerow(["money", "prize_pool", "", "", computed["prize_pool"], ""])
    writer.writerow(["money", "fee", "", "", computed["fee"] or "", ""])
    for player, amount in (computed.get("payouts") or {}).items():
        writer.writerow(["money", "payout", player, "", amount, ""])
    # The figures and the ledger's lines as the page shows them, each row its section's.
    writer.writerow(["figure", "field", "recomputed", "recorded", "reported", "differs"])
    for row in audit_figures(report):
        marks = row.recorded_marks + row.reported_marks
        writer.writerow(
            [
                "figure",
                row.label,
                row.computed,
                row.recorded or "",
                row.reported or "",
                " | ".join(marks),
            ]
        )
    writer.writerow(["entry", "line", "account", "kind", "debit", "credit"])
    for line in ledger_lines(report, game_id)["lines"]:
        writer.writerow(
            ["entry", line["number"], line["account"], line["kind"], line["debit"], line["credit"]]
        )
    for found in report.discrepancies:
        writer.writerow(["discrepancy", found.source, found.field, found.reported, found.computed])
    response = Response(out.getvalue(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.csv"'
    return response
