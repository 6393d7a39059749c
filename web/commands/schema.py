"""`rummy-ledger schema`: the JSON Schemas and OpenAPI request bodies, generated."""

from __future__ import annotations

import sys

import click


@click.command("schema")
@click.argument("name", required=False)
@click.option("--write", is_flag=True, help="Write docs/schema/*.json and web/api/openapi.json.")
@click.option("--check", is_flag=True, help="Exit 1 if a committed file differs from the models.")
def command(name: str | None, write: bool, check: bool) -> None:
    """Generate the record and API JSON Schemas (docs/schema/) and the OpenAPI request bodies
    from the models the ledger validates with.

    With NAME, print that schema (one per record format and per API body); with neither
    NAME nor an option, list them.
    """
    from web.api import contract

    if name is not None:
        if name not in contract.schema_names():
            raise click.BadParameter(
                f"no schema {name!r} (known: {', '.join(contract.schema_names())})",
                param_hint="NAME",
            )
        sys.stdout.write(contract.schema_text(name))
        return
    if write:
        for path, text in contract.generated_files().items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                click.echo(f"wrote {path.relative_to(contract.ROOT)}")
    if check:
        stale = contract.drifted()
        for path in stale:
            click.echo(f"{path.relative_to(contract.ROOT)} differs from the models", err=True)
        if stale:
            click.echo("run `rummy-ledger schema --write`", err=True)
            raise SystemExit(1)
        click.echo("the generated schema files match the models")
    if not write and not check:
        for entry in contract.schema_index()["schemas"]:
            click.echo(f"{entry['name']:<12} {entry['title']}")
