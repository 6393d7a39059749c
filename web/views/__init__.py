"""One blueprint per area of the site: games, replays, audit, players."""
