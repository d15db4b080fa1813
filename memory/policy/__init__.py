"""Who may talk, with which model, and what it has cost: a server's policy and settings, the
spending ledger.
"""
