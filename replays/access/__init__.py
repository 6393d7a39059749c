"""Who may see what: staff and player accounts, operator API tokens, which operator owns
which game, and the access log of who looked at which game.
"""
